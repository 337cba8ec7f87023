package nethttp

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.uber.org/yarpc/yarpcerrors"
)

// FuzzParseTTL: a Context-TTL-MS value is either refused or read as the
// exact non-negative count of milliseconds it writes in decimal.
func FuzzParseTTL(f *testing.F) {
	for _, s := range []string{"", "0", "1", "250", "-1", "+5", " 5", "5ms", "9223372036854", "9223372036855", "99999999999999999999", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseTTL(v)
		if !ok {
			if d != 0 {
				t.Fatalf("refused %q but returned %v", v, d)
			}
			return
		}
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			t.Fatalf("accepted %q, which is no non-negative decimal", v)
		}
		if d != time.Duration(ms)*time.Millisecond || d < 0 {
			t.Fatalf("%q read as %v", v, d)
		}
	})
}

// FuzzStatusError: whatever a response's status and Rpc-Error-Code, the
// error carries a code other than ok, and an error status never reads as
// a success.
func FuzzStatusError(f *testing.F) {
	f.Add(503, "")
	f.Add(404, "not-found")
	f.Add(500, "ok")
	f.Add(499, "bogus")
	f.Add(600, "unavailable")
	f.Fuzz(func(t *testing.T, status int, code string) {
		h := http.Header{}
		if code != "" {
			h.Set(_errorCodeHeader, code)
		}
		err := StatusError(status, h)
		if err == nil {
			t.Fatal("no error")
		}
		if c := yarpcerrors.FromError(err).Code(); c == yarpcerrors.CodeOK {
			t.Fatalf("status %d, code %q: ok", status, code)
		}
	})
}
