package grpcgo_test

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/testmesh"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A yarpc service with errown calls a grpc-go service with errown that
// fails, and the reverse: the claims cross in both directions, the caller
// next to the failure retries it once, and the root sees it unclaimed.
func TestInterop(t *testing.T) {
	for _, tt := range []struct {
		name  string
		start func(t *testing.T) (caller, callee *node)
	}{
		{"yarpc calls grpc-go", func(t *testing.T) (*node, *node) {
			callee := startGRPC(t, nodeConfig{name: _c, errown: noPolicy(), work: failWith(codes.Unavailable)})
			return startYARPC(t, nodeConfig{name: _b, errown: retrying(_c), callee: callee}), callee
		}},
		{"grpc-go calls yarpc", func(t *testing.T) (*node, *node) {
			callee := startYARPC(t, nodeConfig{name: _c, errown: noPolicy(), work: func(context.Context) error {
				return yarpcerrors.UnavailableErrorf("down")
			}})
			return startGRPC(t, nodeConfig{name: _b, errown: retrying(_c), callee: callee}), callee
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			caller, callee := tt.start(t)
			// The first root request is the incident's onset: the
			// caller's first attempt goes unmarked; the second, in the
			// incident, is marked on both attempts. Each is answered
			// alike, claims and figures exact.
			for i := range 2 {
				r := callRoot(t, caller)
				assert.Equal(t, map[string]int64{_b: int64(i + 1), _c: 2 * int64(i+1)}, served(caller, callee), "root request %d: served", i)
				assert.Equal(t, codes.Unavailable, r.code, "root request %d: root code (trailer %v)", i, r.trailer)
				assert.Equal(t, _unclaimed, r.get(_claimHeader), "root request %d: root %s (trailer %v)", i, _claimHeader, r.trailer)
				assert.Equal(t, "3,3,1,1,1", r.get(_stormHeader), "root request %d: root storm (trailer %v)", i, r.trailer)
			}
			// The caller read the callee's claim on both attempts: each
			// logical call failed claimed, and was retried once.
			assert.Equal(t, int64(2), caller.counter("egress.failures", map[string]string{"claim": _claimed}), "caller's failed calls with claim claimed")
			assert.Equal(t, int64(2), caller.counter("retry.attempts", map[string]string{"callee": _c}), "caller's retries")
			want := rootStorm(true, true, 3, 3, 1, 1, 1)
			assert.Equal(t, []inbound.Storm{atOnset(want), want}, caller.rootStorms(), "caller's root storms")
			// The callee, a leaf, served one request each time it was
			// unmarked: no storm.
			assert.Empty(t, callee.rootStorms(), "callee's root storms")
		})
	}
}

// The code a grpc-go handler's error has is the code errown's server
// interceptor classifies it by, and the code yarpc's gRPC outbound hands
// its caller: errown's mirror of yarpc's gRPC code table agrees with
// yarpc's own, code by code.
func TestCodesAsYARPCReadsThem(t *testing.T) {
	var code codes.Code
	server := startGRPC(t, nodeConfig{name: _c, errown: noPolicy(), work: func(context.Context) error {
		return status.Error(code, "boom")
	}})
	d, err := testmesh.NewClient("yarpc-caller", testmesh.TransportOptions{}, nil, testmesh.Callee{Name: _c, Kind: testmesh.GRPCGo, Addr: server.addr})
	require.NoError(t, err)
	defer func() { _ = d.Stop() }()
	client := raw.New(d.ClientConfig(_c))
	for code = codes.Canceled; code <= codes.Unauthenticated; code++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := client.Call(ctx, _procedure, nil)
		cancel()
		got := yarpcerrors.FromError(err).Code()
		decisions := server.mw.Introspect().Decisions
		require.NotEmpty(t, decisions, "%v: errown made no decision", code)
		assert.Equal(t, got.String(), decisions[0].Code, "grpc %v: errown classified it as %q, yarpc's caller got %q", code, decisions[0].Code, got)
		assert.Equal(t, _claimed, decisions[0].Claim, "grpc %v: claim", code)
	}
}
