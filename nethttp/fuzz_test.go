package nethttp

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
			require.Zero(t, d, "refused %q but returned %v", v, d)
			return
		}
		ms, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "accepted %q, which is no non-negative decimal", v)
		require.GreaterOrEqual(t, ms, int64(0), "accepted %q, which is no non-negative decimal", v)
		require.Equal(t, time.Duration(ms)*time.Millisecond, d, "%q read as %v", v, d)
		require.GreaterOrEqual(t, d, time.Duration(0), "%q read as %v", v, d)
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
		require.Error(t, err, "no error")
		require.NotEqual(t, yarpcerrors.CodeOK, yarpcerrors.FromError(err).Code(), "status %d, code %q: ok", status, code)
	})
}
