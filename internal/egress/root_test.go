package egress

import (
	"context"
	"testing"

	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
)

// TestCallCarriesRootKey: a marked call carries its request's root key
// in the root header, under the name configured; an unmarked call (the
// steady state) carries no errown header, and neither does a request
// without a key.
func TestCallCarriesRootKey(t *testing.T) {
	tests := []struct {
		name   string
		cfg    outbound.Config
		marked bool
		root   uint64
		want   map[string]string
	}{
		{name: "marked, a key", marked: true, root: 0xabc, want: map[string]string{"errown-attempt": "1", "errown-root": "abc"}},
		{name: "marked, no key", marked: true, want: map[string]string{"errown-attempt": "1"}},
		{name: "unmarked, a key", root: 0xabc},
		{
			name:   "renamed",
			cfg:    outbound.Config{Headers: ownership.Headers{Root: "x-root"}},
			marked: true, root: 0xabc,
			want: map[string]string{"errown-attempt": "1", "x-root": "abc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw, err := New(tt.cfg)
			require.NoError(t, err)
			ctx, log := trackedContext()
			if tt.marked {
				log.SetMarked()
			}
			log.SetRoot(tt.root)
			var got map[string]string
			out := &funcOutbound{call: func(_ context.Context, r *transport.Request) (*transport.Response, error) {
				got = r.Headers.Items()
				return &transport.Response{}, nil
			}}
			_, err = mw.Call(ctx, &transport.Request{Service: "s", Procedure: "p", Headers: transport.NewHeaders()}, out)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
