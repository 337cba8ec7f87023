package depmem

import (
	"github.com/errown/errown/ownership"
)

// Wildcard in a Declaration field matches any value.
const Wildcard = "*"

// Declaration states the kind of an edge in configuration, overriding
// anything learned. CallerProcedure and Procedure may be "*" (or empty,
// which means the same) to match any; Service is required.
type Declaration struct {
	// CallerProcedure is this service's inbound procedure; "*" for any.
	CallerProcedure string `yaml:"callerProcedure,omitempty"`
	// Service is the callee service. Required.
	Service string `yaml:"service,omitempty"`
	// Procedure is the callee procedure; "*" for any.
	Procedure string `yaml:"procedure,omitempty"`
	// Kind is the edge's kind: fail-close, fail-open or unknown in YAML,
	// e.g. new(ownership.KindFailOpen) in Go. Required, with no default:
	// nil is a validation error.
	Kind *ownership.EdgeKind `yaml:"kind,omitempty"`
	// Recorded says that the callee is no RPC outbound: the handlers
	// report their calls to it with outbound.Record (a database, a
	// cache). errown.Module checks at start that every other
	// declaration's Service is a service the dispatcher has an outbound
	// for; a Recorded one is not looked for there. Default false.
	Recorded bool `yaml:"recorded,omitempty"`
}
