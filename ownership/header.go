package ownership

import "fmt"

// MaxHeaderName is the longest header name errown accepts in configuration.
const MaxHeaderName = 64

// ValidateHeaderName checks a configured header name: non-empty, at most
// MaxHeaderName bytes, and only lower-case letters, digits and '-' (yarpc
// lowercases application header names, and every transport carries these).
// key names the configuration key in the error.
func ValidateHeaderName(key, name string) error {
	if name == "" {
		return fmt.Errorf("%s: must not be empty", key)
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
