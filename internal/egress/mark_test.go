package egress

import (
	"testing"

	"github.com/errown/errown/outbound"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
)

// TestMarkCopiesHeaders: the marked request carries the caller's headers,
// original names and canonical ones, the attempt header "1" and the root
// header when the request has a root key; the
// caller's maps are read, not written; the maps a middleware below got
// are its own for good: a later mark neither reuses nor clears them, and
// what that middleware added reaches no later mark.
func TestMarkCopiesHeaders(t *testing.T) {
	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	tests := []struct {
		name     string
		give     transport.Headers
		root     uint64 // the request's root key; 0: none
		wantOrig map[string]string
		wantKeys map[string]string
	}{
		{
			name:     "lower case",
			give:     transport.NewHeaders().With("x-trace", "abc"),
			wantOrig: map[string]string{"x-trace": "abc", "errown-attempt": "1"},
			wantKeys: map[string]string{"x-trace": "abc", "errown-attempt": "1"},
		},
		{
			name:     "mixed case",
			give:     transport.NewHeaders().With("X-Trace", "abc").With("Baggage", "v"),
			wantOrig: map[string]string{"X-Trace": "abc", "Baggage": "v", "errown-attempt": "1"},
			wantKeys: map[string]string{"x-trace": "abc", "baggage": "v", "errown-attempt": "1"},
		},
		{
			name:     "the caller's attempt header replaced",
			give:     transport.NewHeaders().With("Errown-Attempt", "4"),
			wantOrig: map[string]string{"errown-attempt": "1"},
			wantKeys: map[string]string{"errown-attempt": "1"},
		},
		{
			name:     "a root key",
			give:     transport.NewHeaders().With("x-trace", "abc"),
			root:     0x9e3779b97f4a7c15,
			wantOrig: map[string]string{"x-trace": "abc", "errown-attempt": "1", "errown-root": "9e3779b97f4a7c15"},
			wantKeys: map[string]string{"x-trace": "abc", "errown-attempt": "1", "errown-root": "9e3779b97f4a7c15"},
		},
		{
			name:     "a root key replaces the caller's root header",
			give:     transport.NewHeaders().With("errown-root", "1"),
			root:     0xff,
			wantOrig: map[string]string{"errown-attempt": "1", "errown-root": "ff"},
			wantKeys: map[string]string{"errown-attempt": "1", "errown-root": "ff"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &transport.Request{Service: "s", Headers: tt.give}
			before := copyMap(tt.give.OriginalItems())
			c := mw.mark(req, tt.root)
			assert.Equal(t, tt.wantOrig, c.Headers.OriginalItems())
			assert.Equal(t, tt.wantKeys, c.Headers.Items())
			// A middleware below adds a header to the request it got, and
			// keeps the maps past the call.
			kept := c.Headers.With("Added-Below", "x")
			wantKept := copyMap(kept.Items())
			next := mw.mark(req, tt.root)
			assert.Equal(t, before, tt.give.OriginalItems(), "the caller's headers unchanged")
			assert.Equal(t, tt.wantKeys, next.Headers.Items(), "a later mark")
			assert.Equal(t, wantKept, kept.Items(), "the maps handed below, after a later mark")
			next.Headers.Del("errown-attempt")
			assert.Equal(t, wantKept, kept.Items(), "the maps handed below, after a later mark's were changed")
		})
	}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
