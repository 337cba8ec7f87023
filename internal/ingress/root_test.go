package ingress

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
)

// TestRootKey: a request from inside the mesh keeps the root key it
// came with, and admission judges it by that key; one that came without
// a valid key gets a new one for its calls, and is admitted as a visit
// (key 0); an edge request gets a new one whatever it came with, and,
// with admission on, is admitted by it. The handler's context carries
// the key to the egress middleware (the request's log); a key not
// carried is minted only when asked for, by root (admission) or the log.
func TestRootKey(t *testing.T) {
	const minted = 0x5eed
	tests := []struct {
		name      string
		cfg       inbound.Config
		caller    string
		give      map[string]string // the request's headers
		wantRoot  uint64            // in the handler's context
		wantAdmit uint64
		wantMints int // minted by root, before the handler asks
	}{
		{name: "carried", give: map[string]string{"errown-root": "abc"}, wantRoot: 0xabc, wantAdmit: 0xabc},
		{name: "carried in upper case", give: map[string]string{"Errown-Root": "ABC"}, wantRoot: 0xabc, wantAdmit: 0xabc},
		{name: "none: minted, admitted as a visit", wantRoot: minted},
		{name: "invalid: minted, admitted as a visit", give: map[string]string{"errown-root": "0x12"}, wantRoot: minted},
		{name: "zero: minted, admitted as a visit", give: map[string]string{"errown-root": "0"}, wantRoot: minted},
		{
			name: "an edge request's key is not errown's: minted",
			cfg: inbound.Config{
				Edge:      inbound.EdgeConfig{Callers: []string{"outside"}},
				Admission: inbound.AdmissionConfig{Mode: inbound.AdmissionDisabled},
			},
			caller:   "outside",
			give:     map[string]string{"errown-root": "abc"},
			wantRoot: minted,
		},
		{
			name: "an edge request under admission: minted, admitted by it",
			cfg: inbound.Config{
				Edge:      inbound.EdgeConfig{Callers: []string{"outside"}},
				Admission: inbound.AdmissionConfig{Mode: "observe"},
			},
			caller:   "outside",
			give:     map[string]string{"errown-root": "abc"},
			wantRoot: minted, wantAdmit: minted, wantMints: 1,
		},
		{
			name:     "renamed",
			cfg:      inbound.Config{Headers: ownership.Headers{Root: "x-root"}},
			give:     map[string]string{"x-root": "abc", "errown-root": "def"},
			wantRoot: 0xabc, wantAdmit: 0xabc,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mints := 0
			e := newEnv(t, tt.cfg, withMint(func() uint64 { mints++; return minted }))
			req := request("http")
			if tt.caller != "" {
				req.Caller = tt.caller
			}
			for k, v := range tt.give {
				req.Headers = req.Headers.With(k, v)
			}
			_, admit := e.mw.root(req, e.mw.edge.has(req))
			assert.Equal(t, tt.wantAdmit, admit, "the key admission judges by")
			assert.Equal(t, tt.wantMints, mints, "keys minted by root")

			var got uint64
			err := e.mw.Handle(context.Background(), req, &transporttest.FakeResponseWriter{}, handlerFunc(func(ctx context.Context, _ *transport.Request, _ transport.ResponseWriter) error {
				log := reqlog.FromContext(ctx)
				got = log.Root()
				assert.Equal(t, got, log.Root(), "a key minted once")
				return nil
			}))
			require.NoError(t, err)
			assert.Equal(t, tt.wantRoot, got, "the root key in the handler's context")
		})
	}
}

// TestMintRoot: minted keys are never 0, and differ.
func TestMintRoot(t *testing.T) {
	seen := make(map[uint64]bool)
	for range 1000 {
		k := mintRoot()
		require.NotZero(t, k)
		seen[k] = true
	}
	assert.Len(t, seen, 1000)
}

// withMint mints root keys with mint, which never returns 0. Default:
// mintRoot.
func withMint(mint func() uint64) Option {
	return optionFunc(func(o *options) { o.mint = mint })
}

// withAdmissionClock has admission, and the requests it times, read the
// time from now, monotonic. Default time.Now.
func withAdmissionClock(now func() time.Time) Option {
	return optionFunc(func(o *options) { o.admissionNow = now })
}
