// Package configkey names configuration keys in errors. Under places a
// section's errors under its key: each package's Config names its keys
// relative to itself, and the Config that holds it as a section puts the
// section's key in front. Similar and Closest find the key a misspelled
// one was meant to be.
package configkey

import (
	"fmt"
	"net/url"

	"go.uber.org/multierr"
)

// Under returns err with "key." in front of each of its errors, which stay
// wrapped; nil for nil.
func Under(key string, err error) error {
	errs := multierr.Errors(err)
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = fmt.Errorf("%s.%w", key, e)
	}
	return multierr.Combine(out...)
}

// RedactURL returns raw with any password replaced, for an error message
// or a log line; a URL that does not parse is not echoed at all.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
