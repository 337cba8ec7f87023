package grpcgo

import (
	"strconv"
	"testing"

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
		if got := pushback(md); got != want {
			t.Fatalf("pushback(%q, twice %v) = %v, want %v", v, twice, got, want)
		}
		h := responseHeaders(md, "errown-no-retry")
		if _, ok := h.Get("errown-no-retry"); ok != want {
			t.Fatalf("no-retry header %v for %q (twice %v)", ok, v, twice)
		}
	})
}
