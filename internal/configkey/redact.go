package configkey

import "net/url"

// RedactURL returns raw with any password replaced, for an error message
// or a log line; a URL that does not parse is not echoed at all.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
