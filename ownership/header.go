package ownership

import (
	"fmt"
	"strings"

	"github.com/errown/errown/internal/defaults"
	"go.uber.org/multierr"
)

// _maxHeaderName is the longest header name errown accepts in configuration.
const _maxHeaderName = 64

// _reservedPrefixes start header names that yarpc or gRPC keep for
// themselves: yarpc's gRPC transport refuses application headers with them.
var _reservedPrefixes = []string{"rpc-", "grpc-", "$rpc$-"}

// validateHeaderName checks a configured header name: non-empty, at most
// _maxHeaderName bytes, only lower-case letters, digits and '-' (yarpc
// lowercases application header names), and not starting with a prefix
// yarpc or gRPC reserve ("rpc-", "grpc-"), so that every transport carries
// it. key names the configuration key in the error.
func validateHeaderName(key, name string) error {
	if name == "" {
		return fmt.Errorf("%s: must not be empty", key)
	}
	for _, p := range _reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("%s: %q starts with %q, which yarpc reserves", key, name, p)
		}
	}
	if len(name) > _maxHeaderName {
		return fmt.Errorf("%s: must be at most %d bytes, got %d", key, _maxHeaderName, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("%s: must be lower-case letters, digits and '-', got %q", key, name)
		}
	}
	return nil
}

// Headers names the application headers errown reads and writes. It is
// embedded, inline, in the Config of every package that uses them, so the
// YAML keys are the same everywhere. A field left empty means its default.
type Headers struct {
	// Claim is the response header carrying the callee's claim. Default
	// "errown-claim".
	Claim string `yaml:"claimHeader,omitempty"`
	// Attempt is the request header carrying the attempt number: 2 and up
	// on every retry, and "1" on a first attempt in an incident (the
	// calling procedure's failure, retry or storm within the
	// incidentWindow, or a request that came marked): it tells the callee
	// that an errown caller reads its storm telemetry. A request without
	// it is a root, whose storm telemetry the callee reports. Default
	// "errown-attempt".
	Attempt string `yaml:"attemptHeader,omitempty"`
	// NoRetry is the response header by which a callee asks not to be
	// retried (value "true"). It is read on every error response, whether
	// or not the call has a retry policy. Default "errown-no-retry".
	NoRetry string `yaml:"noRetryHeader,omitempty"`
	// Code is the response header carrying the code of an application
	// error (a Thrift exception's rpc.code), read when the transport
	// dropped it (gRPC). Default "errown-code".
	Code string `yaml:"codeHeader,omitempty"`
	// Storm is the response header carrying storm telemetry up the call
	// graph. Default "errown-storm".
	Storm string `yaml:"stormHeader,omitempty"`
	// Root is the request header carrying the root key: the root request
	// a request is part of, minted where a request enters the mesh
	// without one and carried with the attempt header, so that an
	// overloaded service admits whole root requests, not visits
	// (inbound.AdmissionConfig). Default "errown-root".
	Root string `yaml:"rootHeader,omitempty"`
	// Shed is the response header that marks an answer as shed by the
	// callee instance's admission (inbound.AdmissionConfig), its value
	// the reason; it comes only with the claim "claimed" and the
	// no-retry header, which a caller that does not read it obeys. The
	// direct caller may retry a shed once on another instance of the
	// callee (package retrypeer), and does not count it as evidence of
	// overload. Default "errown-shed".
	Shed string `yaml:"shedHeader,omitempty"`
}

// DefaultHeaders returns the header names errown uses where Headers
// leaves a name empty.
func DefaultHeaders() Headers {
	return Headers{
		Claim:   defaults.ClaimHeader,
		Attempt: defaults.AttemptHeader,
		NoRetry: defaults.NoRetryHeader,
		Code:    defaults.CodeHeader,
		Storm:   defaults.StormHeader,
		Root:    defaults.RootHeader,
		Shed:    defaults.ShedHeader,
	}
}

// headerField is one row of the header table: a field of Headers and
// its YAML key.
type headerField struct {
	key  string
	name *string
}

// fields is the header table of h.
func (h *Headers) fields() []headerField {
	return []headerField{
		{"claimHeader", &h.Claim},
		{"attemptHeader", &h.Attempt},
		{"noRetryHeader", &h.NoRetry},
		{"codeHeader", &h.Code},
		{"stormHeader", &h.Storm},
		{"rootHeader", &h.Root},
		{"shedHeader", &h.Shed},
	}
}

// withDefaults returns h with each empty name replaced by
// DefaultHeaders' (the zero Headers are the defaults).
func (h Headers) withDefaults() Headers { return defaults.Fill(h, DefaultHeaders()) }

// Validate reports, by YAML key, every invalid header name of h after
// defaults are applied (see validateHeaderName), and every name used by
// two headers.
func (h Headers) Validate() error {
	h = h.withDefaults()
	var err error
	used := make(map[string]string, 7)
	for _, f := range h.fields() {
		err = multierr.Append(err, validateHeaderName(f.key, *f.name))
		if other, ok := used[*f.name]; ok {
			err = multierr.Append(err, fmt.Errorf("%s: %q is already used by %s", f.key, *f.name, other))
		}
		used[*f.name] = f.key
	}
	return err
}
