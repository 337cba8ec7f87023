package depmem

import (
	"sync"
	"testing"
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
