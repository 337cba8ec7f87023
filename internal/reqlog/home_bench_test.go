package reqlog

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"unsafe"
)

// BenchmarkHome compares ways of choosing the shard an insert tries
// first, each under b.RunParallel with GOMAXPROCS 1 and 2: the hash of
// the Log's allocator page (pageHome, what homeOf was), a random shard
// (homeOf), and a home per P kept in a sync.Pool. A request opens its Log and removes it, with 64
// Logs held throughout, as bench's IngressLog does.
func BenchmarkHome(b *testing.B) {
	ballast := make([]byte, 64<<20) // a server-like heap goal: see bench's IngressLog
	defer runtime.KeepAlive(ballast)
	homes := []struct {
		name string
		home func(m *Map) func(l *Log) uint64
	}{
		{"page", func(m *Map) func(*Log) uint64 { return func(l *Log) uint64 { return pageHome(m, l) } }},
		{"random", func(m *Map) func(*Log) uint64 { return m.homeOf }},
		{"pool", func(*Map) func(*Log) uint64 {
			var p sync.Pool
			p.New = func() any { h := rand.Uint64(); return &h }
			return func(*Log) uint64 {
				h := p.Get().(*uint64)
				v := *h
				p.Put(h)
				return v
			}
		}},
	}
	for _, procs := range []int{1, 2} {
		for _, h := range homes {
			b.Run("gomaxprocs="+string(rune('0'+procs))+"/"+h.name, func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				m, err := NewMap(Config{})
				if err != nil {
					b.Fatal(err)
				}
				for range 64 {
					m.Open("held")
				}
				home := h.home(m)
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						l := &Log{Procedure: "p"}
						if _, ok := m.insertFrom(home(l), l); !ok {
							panic("full")
						}
						m.Remove(l)
					}
				})
			})
		}
	}
}

// pageHome is what homeOf was: a hash of the allocator's page (8 KiB) that
// l lives in, so that the Logs a core allocates from one span start in
// one shard.
func pageHome(m *Map, l *Log) uint64 {
	page := uint64(uintptr(unsafe.Pointer(l)) >> 13)
	shift := uint(bits.TrailingZeros64(m.mask + 1))
	return page * 0x9E3779B97F4A7C15 >> (64 - shift) // Fibonacci hashing; 0 for one shard
}
