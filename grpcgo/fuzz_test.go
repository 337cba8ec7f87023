package grpcgo

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"
)

// FuzzPushback: grpc-retry-pushback-ms asks not to retry exactly when
// grpc-go would not retry on it: one value that is not a non-negative
// decimal int, or several values; a non-negative delay does not.
func FuzzPushback(f *testing.F) {
	for _, s := range []string{"", "0", "10", "-1", "abc", " 5", "+5", "99999999999999999999", "1.5"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, v string, twice bool) {
		md := metadata.MD{_pushbackKey: []string{v}}
		if twice {
			md[_pushbackKey] = append(md[_pushbackKey], v)
		}
		n, err := strconv.Atoi(v)
		want := twice || err != nil || n < 0
		require.Equal(t, want, pushback(md), "pushback(%q, twice %v)", v, twice)
		h := responseHeaders(md, "errown-no-retry")
		_, ok := h.Get("errown-no-retry")
		require.Equal(t, want, ok, "no-retry header for %q (twice %v)", v, twice)
	})
}
