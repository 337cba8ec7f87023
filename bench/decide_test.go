package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"go.uber.org/yarpc/api/transport"
)

var _sinkClaim ownership.Claim

// BenchmarkDecide is the claim decision over a failed request's failed
// outbound calls.
func BenchmarkDecide(b *testing.B) {
	tests := []struct {
		name string
		give []ingress.Failure
	}{
		{"none", nil},
		{"one-correlated-retried", []ingress.Failure{{Kind: ownership.KindFailClose, RCS: true}}},
		{"eight-mixed", []ingress.Failure{
			{Kind: ownership.KindFailOpen}, {Kind: ownership.KindFailClose, RCS: true},
			{Kind: ownership.KindUnknown, RCS: true}, {Kind: ownership.KindFailOpen, RCS: true},
			{Kind: ownership.KindFailClose, RCS: true}, {Kind: ownership.KindUnknown, RCS: true},
			{Kind: ownership.KindFailOpen}, {Kind: ownership.KindFailClose, RCS: true},
		}},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_sinkClaim = ingress.Decide(tt.give, true)
			}
		})
	}
}

// BenchmarkBudget is the retry budget: its pure arithmetic, and the
// success path of the retry middleware for a callee with a policy, which
// counts every call in the callee's budget, alone and under parallel load.
func BenchmarkBudget(b *testing.B) {
	b.Run("allows", func(b *testing.B) {
		b.ReportAllocs()
		ok := false
		for i := 0; b.Loop(); i++ {
			ok = retrier.BudgetAllows(int64(i), int64(i/10), 0.1, 10, 10*time.Second) != ok
		}
	})
	newRetry := func(b *testing.B) *retrier.Middleware {
		m, err := retrier.New(retry.Config{Policies: []retry.PolicyConfig{{Service: _callee, Idempotent: new(true)}}})
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	call := func(b *testing.B, m *retrier.Middleware) {
		req := &transport.Request{Service: _callee, Procedure: _procedure, Body: bytes.NewReader(_payload), BodySize: len(_payload)}
		if _, err := m.Call(context.Background(), req, memOutbound{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("retry-call", func(b *testing.B) {
		m := newRetry(b)
		b.ReportAllocs()
		for b.Loop() {
			call(b, m)
		}
	})
	b.Run("retry-call-parallel", func(b *testing.B) {
		m := newRetry(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call(b, m)
			}
		})
	})
}

var _sinkKind ownership.EdgeKind

// BenchmarkDepmemObserve is the dependency memory on the failure path:
// counting a callee failure on a known edge, alone and under parallel
// load, and classifying an edge, learned and declared.
func BenchmarkDepmemObserve(b *testing.B) {
	edge := ownership.Edge{CallerProcedure: _procedure, Service: _callee, Procedure: _procedure}
	newMemory := func(b *testing.B) *memory.Memory {
		m, err := memory.NewMemory(depmem.Config{MinSamples: 1})
		if err != nil {
			b.Fatal(err)
		}
		m.Observe(edge, true)
		return m
	}
	b.Run("observe", func(b *testing.B) {
		m := newMemory(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			m.Observe(edge, i&1 == 0)
		}
	})
	b.Run("observe-parallel", func(b *testing.B) {
		m := newMemory(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Observe(edge, true)
			}
		})
	})
	b.Run("kind-learned", func(b *testing.B) {
		m := newMemory(b)
		b.ReportAllocs()
		for b.Loop() {
			_sinkKind = m.Kind(edge)
		}
	})
	b.Run("kind-declared", func(b *testing.B) {
		s, err := memory.NewStatic([]depmem.Declaration{{Service: _callee, Kind: new(ownership.KindFailOpen)}}, newMemory(b))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			_sinkKind = s.Kind(edge)
		}
	})
}
