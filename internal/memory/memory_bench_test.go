package memory

import (
	"sync"
	"testing"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/ownership"
)

// startedMemory returns a memory with cfg, started as errown starts it
// (its coarse clock runs) and stopped when b ends.
func startedMemory(b *testing.B, cfg depmem.Config) *Memory {
	m, err := NewMemory(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Stop() })
	return m
}

// BenchmarkObserve compares recording a callee failure on a known edge
// with the least it could cost: one locked counter increment. Run it with
// -cpu 1,2: known-edge-parallel is every core observing the same edge,
// as when one edge fails.
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
		m := startedMemory(b, depmem.Config{})
		m.Observe(edgeA, true)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.Observe(edgeA, i&1 == 0)
		}
	})
	b.Run("known-edge-parallel", func(b *testing.B) {
		m := startedMemory(b, depmem.Config{})
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
		m := startedMemory(b, depmem.Config{})
		for i := range depmem.DefaultConfig().MaxEdges {
			m.Observe(churnEdge(i), true)
		}
		edges := make([]ownership.Edge, 1024)
		for i := range edges {
			edges[i] = churnEdge(depmem.DefaultConfig().MaxEdges + i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.Observe(edges[i%len(edges)], true)
		}
	})
	b.Run("kind", func(b *testing.B) {
		m := startedMemory(b, depmem.Config{MinSamples: 1})
		m.Observe(edgeA, true)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.Kind(edgeA)
		}
	})
}
