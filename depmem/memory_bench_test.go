package depmem

import (
	"sync"
	"testing"

	"github.com/errown/errown/egresslog"
)

// BenchmarkObserve compares recording a callee failure on a known edge
// with the least it could cost: one locked counter increment.
func BenchmarkObserve(b *testing.B) {
	b.Run("baseline-locked-increment", func(b *testing.B) {
		var mu sync.Mutex
		var n int64
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			mu.Lock()
			n++
			mu.Unlock()
		}
		_ = n
	})
	b.Run("known-edge", func(b *testing.B) {
		m, err := NewMemory(Config{})
		if err != nil {
			b.Fatal(err)
		}
		m.Observe(edgeA, true)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.Observe(edgeA, i&1 == 0)
		}
	})
	b.Run("known-edge-parallel", func(b *testing.B) {
		m, err := NewMemory(Config{})
		if err != nil {
			b.Fatal(err)
		}
		m.Observe(edgeA, true)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Observe(edgeA, true)
			}
		})
	})
	b.Run("new-edge-when-full", func(b *testing.B) {
		// Every place taken by an edge inside the window: a new edge is
		// dropped without scanning for idle ones.
		m, err := NewMemory(Config{})
		if err != nil {
			b.Fatal(err)
		}
		for i := range DefaultMaxEdges {
			m.Observe(churnEdge(i), true)
		}
		edges := make([]egresslog.Edge, 1024)
		for i := range edges {
			edges[i] = churnEdge(DefaultMaxEdges + i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.Observe(edges[i%len(edges)], true)
		}
	})
	b.Run("kind", func(b *testing.B) {
		m, err := NewMemory(Config{MinSamples: 1})
		if err != nil {
			b.Fatal(err)
		}
		m.Observe(edgeA, true)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.Kind(edgeA)
		}
	})
}
