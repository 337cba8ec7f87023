package e2e_test

import (
	"sync"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/fxtest"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/testidl/thrift/echo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThriftChainStorm: the storm telemetry of the Thrift chain, D
// raising an exception with the IDL code unavailable after calling E..G,
// errown on every hop without a budget. A Thrift exception never reaches
// middleware as an error, yet every hop's figures cross the wire: the root
// reports per request served 1+1+1+2·4 = 11 (A, B, C once, D..G twice:
// C retries D), blind 1+2(1+2(1+2·4)) = 39, 28 prevented, radius 1, blind
// radius 3 — on every transport, gRPC included, which carries the
// exception's code only in errown's own header.
func TestThriftChainStorm(t *testing.T) {
	const requests = 5
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			var (
				mu     sync.Mutex
				storms []inbound.Storm
			)
			hook := errown.WithStormHook(func(s inbound.Storm) {
				mu.Lock()
				defer mu.Unlock()
				storms = append(storms, s)
			})
			setup := errownAll(0, 20)
			c := startIDLChain(t, tr, 7, func(i int, next string) fxtest.ServiceConfig {
				cfg := setup(i, next)
				cfg.ErrownOptions = append(cfg.ErrownOptions, hook) // on every hop: only the root may record
				return cfg
			})
			c.nodes[3].setFail(func() error { return &echo.UnavailableError{Message: msg()} })

			err := c.callThrift(t, requests)

			var ex *echo.UnavailableError
			require.ErrorAs(t, err, &ex)
			assert.InDeltaSlice(t, []float64{1, 1, 1, 2, 2, 2, 2}, c.served(requests), 1e-9)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, storms, requests, "one root storm per request: no hop below takes itself for a root")
			for _, s := range storms {
				assert.True(t, s.Known)
				assert.True(t, s.Failed)
				assert.Equal(t, []any{uint64(11), uint64(39), uint64(28), uint64(1), 1, 3},
					[]any{s.Served, s.Blind, s.Prevented, s.Retries, s.Radius, s.BlindRadius})
			}
		})
	}
}
