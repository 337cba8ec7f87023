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
			r := callRoot(t, caller)
			assert.Equal(t, map[string]int64{_b: 1, _c: 2}, served(caller, callee), "served")
			assert.Equal(t, codes.Unavailable, r.code, "root code (trailer %v)", r.trailer)
			assert.Equal(t, _unclaimed, r.get(_claimHeader), "root %s (trailer %v)", _claimHeader, r.trailer)
			assert.Equal(t, "3,3,1,1,1", r.get(_stormHeader), "root storm (trailer %v)", r.trailer)
			// The caller read the callee's claim on both attempts: the
			// logical call failed claimed, and was retried once.
			assert.Equal(t, int64(1), caller.counter("egress.failures", map[string]string{"claim": _claimed}), "caller's failed calls with claim claimed")
			assert.Equal(t, int64(1), caller.counter("retry.attempts", map[string]string{"callee": _c}), "caller's retries")
			assert.Equal(t, []inbound.Storm{rootStorm(true, true, 3, 3, 1, 1, 1)}, caller.rootStorms(), "caller's root storms")
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
		decisions := server.mw.Decisions()
		require.NotEmpty(t, decisions, "%v: errown made no decision", code)
		assert.Equal(t, got.String(), decisions[0].Code, "grpc %v: errown classified it as %q, yarpc's caller got %q", code, decisions[0].Code, got)
		assert.Equal(t, _claimed, decisions[0].Claim, "grpc %v: claim", code)
	}
}
