package egress

import (
	"context"
	"testing"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

func openRequest(t *testing.T, procedure string) (context.Context, *reqlog.Log) {
	logs, err := reqlog.NewMap(reqlog.Config{})
	require.NoError(t, err)
	ctx, log := logs.OpenContext(context.Background(), procedure)
	require.NotNil(t, log)
	return ctx, log
}

func TestRecord(t *testing.T) {
	cache := ownership.Edge{CallerProcedure: "checkout", Service: "cache"}
	tests := []struct {
		name        string
		giveErr     error
		giveRetried bool
		wantKept    []calls.Entry
		wantCounts  calls.Counts
	}{
		{name: "success: counted", wantCounts: calls.Counts{NotFailed: 1}},
		{name: "an answer: counted", giveErr: yarpcerrors.NotFoundErrorf("miss"), wantCounts: calls.Counts{NotFailed: 1}},
		{
			name:       "a failure nobody retried: kept, RCS false",
			giveErr:    yarpcerrors.UnavailableErrorf("down"),
			wantKept:   []calls.Entry{{Edge: cache, Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Attempts: 1}},
			wantCounts: calls.Counts{Stored: 1},
		},
		{
			name:        "a failure the handler retried: kept, RCS true",
			giveErr:     yarpcerrors.UnavailableErrorf("down"),
			giveRetried: true,
			wantKept:    []calls.Entry{{Edge: cache, Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Attempts: 2, RCS: true}},
			wantCounts:  calls.Counts{Stored: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, log := openRequest(t, "checkout")
			assert.True(t, outbound.Record(ctx, "cache", tt.giveErr, tt.giveRetried))
			assert.Equal(t, tt.wantKept, log.Egress.Close(nil))
			assert.Equal(t, tt.wantCounts, log.Egress.Counts())
		})
	}
	assert.False(t, outbound.Record(context.Background(), "cache", nil, false), "untracked")
	ctx, log := openRequest(t, "checkout")
	log.Egress.Close(nil)
	assert.False(t, outbound.Record(ctx, "cache", nil, false), "the request finished")
}

func TestClaim(t *testing.T) {
	_, ok := outbound.Claim(context.Background(), "payments", "charge")
	assert.False(t, ok, "untracked")

	mw, err := New(outbound.Config{})
	require.NoError(t, err)
	ctx, _ := openRequest(t, "checkout")
	_, ok = outbound.Claim(ctx, "payments", "charge")
	assert.False(t, ok, "no call yet")

	out := outboundtest.New(outboundtest.Answer(withClaim("claimed"), yarpcerrors.UnavailableErrorf("down")))
	_, _ = mw.Call(ctx, &transport.Request{Service: "payments", Procedure: "charge"}, out)
	claim, ok := outbound.Claim(ctx, "payments", "charge")
	assert.True(t, ok)
	assert.Equal(t, ownership.ClaimClaimed, claim)
	_, ok = outbound.Claim(ctx, "payments", "refund")
	assert.False(t, ok, "another procedure")
}
