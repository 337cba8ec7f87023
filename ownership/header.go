package ownership

import (
	"fmt"
	"strings"
)

// MaxHeaderName is the longest header name errown accepts in configuration.
const MaxHeaderName = 64

// _reservedPrefixes start header names that yarpc or gRPC keep for
// themselves: yarpc's gRPC transport refuses application headers with them.
var _reservedPrefixes = []string{"rpc-", "grpc-", "$rpc$-"}

// ValidateHeaderName checks a configured header name: non-empty, at most
// MaxHeaderName bytes, only lower-case letters, digits and '-' (yarpc
// lowercases application header names), and not starting with a prefix
// yarpc or gRPC reserve ("rpc-", "grpc-"), so that every transport carries
// it. key names the configuration key in the error.
func ValidateHeaderName(key, name string) error {
	if name == "" {
		return fmt.Errorf("%s: must not be empty", key)
	}
	for _, p := range _reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("%s: %q starts with %q, which yarpc reserves", key, name, p)
		}
	}
	if len(name) > MaxHeaderName {
		return fmt.Errorf("%s: must be at most %d bytes, got %d", key, MaxHeaderName, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("%s: must be lower-case letters, digits and '-', got %q", key, name)
		}
	}
	return nil
}
