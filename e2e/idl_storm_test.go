package e2e_test

import (
	"sync"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
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
//
// The first request is the incident's onset: no hop has seen a failure,
// so every first attempt goes unmarked. D, unmarked, calls E..G unmarked,
// and their quiet success answers it without figures: D's first request
// counts E's subtree as one (D 1 + E 1, "2,2,0,0,0", nothing stormy, so no
// root storm at D). C retries D with the attempt mark, and that second D
// subtree is marked throughout (D 4). C, B and A each serve an unmarked
// request and record a root storm of their own subtree, at the onset: C
// served 1+2+4 = 7, blind 7, 1 retry, radius 1, blind radius 1; B 8, blind
// 1+2·7 = 15, 7 prevented, blind radius 2; A 9, blind 1+2·15 = 31, 22
// prevented, blind radius 3. After it A's procedure is in an incident and
// every request below is marked: only A records the other requests' root
// storms, with the exact figures.
func TestThriftChainStorm(t *testing.T) {
	const requests = 5
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			var mu sync.Mutex
			storms := make(map[int][]inbound.Storm) // by hop
			setup := errownAll(0, 20)
			c := startIDLChain(t, tr, 7, func(i int, next string) errowntest.ServiceConfig {
				cfg := setup(i, next)
				cfg.ErrownOptions = append(cfg.ErrownOptions, errown.WithStormHook(func(s inbound.Storm) {
					mu.Lock()
					defer mu.Unlock()
					storms[i] = append(storms[i], s)
				})) // on every hop: which hops take themselves for a root
				return cfg
			})
			c.nodes[3].setFail(func() error { return &echo.UnavailableError{Message: msg()} })

			err := c.callThrift(t, requests)

			var ex *echo.UnavailableError
			require.ErrorAs(t, err, &ex)
			assert.InDeltaSlice(t, []float64{1, 1, 1, 2, 2, 2, 2}, c.served(requests), 1e-9)
			mu.Lock()
			defer mu.Unlock()
			figures := func(s inbound.Storm) []any {
				return []any{s.Known, s.Failed, s.Onset, s.Served, s.Blind, s.Prevented, s.Retries, s.Radius, s.BlindRadius}
			}
			want := map[int][][]any{
				0: {{true, true, true, uint64(9), uint64(31), uint64(22), uint64(1), 1, 3}},
				1: {{true, true, true, uint64(8), uint64(15), uint64(7), uint64(1), 1, 2}},
				2: {{true, true, true, uint64(7), uint64(7), uint64(0), uint64(1), 1, 1}},
			}
			for range requests - 1 {
				want[0] = append(want[0], []any{true, true, false, uint64(11), uint64(39), uint64(28), uint64(1), 1, 3})
			}
			got := make(map[int][][]any, len(storms))
			for i, ss := range storms {
				for _, s := range ss {
					got[i] = append(got[i], figures(s))
				}
			}
			assert.Equal(t, want, got, "root storms by hop (known, failed, onset, served, blind, prevented, retries, radius, blind radius): the onset's at A, B and C, the rest at A alone")
		})
	}
}
