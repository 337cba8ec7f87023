package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/errown/errown/internal/reqlog"
)

// logMap is what the inbound middleware needs of a map of requests in
// flight. Each implementation bounds the logs held and allocates a Log
// per request, as reqlog.Map does.
type logMap interface {
	Open(procedure string) *reqlog.Log
	Remove(l *reqlog.Log)
	Len() int
}

// mutexMap is the simplest map that keeps its Logs: one map under one
// mutex.
type mutexMap struct {
	mu   sync.Mutex
	max  int
	logs map[*reqlog.Log]struct{}
}

func newMutexMap() *mutexMap {
	return &mutexMap{max: reqlog.DefaultConfig().MaxInFlight, logs: make(map[*reqlog.Log]struct{})}
}

func (m *mutexMap) Open(procedure string) *reqlog.Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.logs) >= m.max {
		return nil
	}
	l := &reqlog.Log{Procedure: procedure}
	m.logs[l] = struct{}{}
	return l
}

func (m *mutexMap) Remove(l *reqlog.Log) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.logs, l)
}

func (m *mutexMap) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.logs)
}

// counter is the simplest bound: one atomic count every request adds to
// and takes from.
type counter struct {
	n   atomic.Int64
	max int64
}

func (m *counter) Open(procedure string) *reqlog.Log {
	if m.n.Add(1) > m.max {
		m.n.Add(-1)
		return nil
	}
	return &reqlog.Log{Procedure: procedure}
}

func (m *counter) Remove(*reqlog.Log) { m.n.Add(-1) }

func (m *counter) Len() int { return int(m.n.Load()) }

// syncMap is the standard library's concurrent map with the bound kept
// in an atomic.
type syncMap struct {
	logs     sync.Map
	inFlight atomic.Int64
	max      int64
}

func newSyncMap() *syncMap { return &syncMap{max: int64(reqlog.DefaultConfig().MaxInFlight)} }

func (m *syncMap) Open(procedure string) *reqlog.Log {
	if m.inFlight.Add(1) > m.max {
		m.inFlight.Add(-1)
		return nil
	}
	l := &reqlog.Log{Procedure: procedure}
	m.logs.Store(l, struct{}{})
	return l
}

func (m *syncMap) Remove(l *reqlog.Log) {
	if _, ok := m.logs.LoadAndDelete(l); ok {
		m.inFlight.Add(-1)
	}
}

func (m *syncMap) Len() int { return int(m.inFlight.Load()) }

// BenchmarkIngressLog is one request's use of the map under parallel
// load, for reqlog.Map and three alternatives, with one goroutine and
// with GOMAXPROCS=2. A request opens its Log (the bound checked, the Log
// counted) and removes it; nothing looks a Log up, since the Log travels
// in the request's context.
//
// A live heap like a server's (ballast) keeps the collector from running
// every few milliseconds, as it would with this benchmark's tiny heap, and
// a warm-up fills the heap once before any timing, so that timed runs
// reuse memory rather than fault fresh pages in: the figures are then the
// maps', not the GC's or the kernel's.
func BenchmarkIngressLog(b *testing.B) {
	ballast := make([]byte, 64<<20) // never touched: costs address space, not memory
	defer runtime.KeepAlive(ballast)
	warm := newMutexMap()
	for range 1 << 20 { // 96 MiB of Logs: more than the heap goal
		warm.Remove(warm.Open(_procedure))
	}
	maps := []struct {
		name string
		new  func(b *testing.B) logMap
	}{
		{"sharded", func(b *testing.B) logMap {
			m, err := reqlog.NewMap(reqlog.Config{})
			if err != nil {
				b.Fatal(err)
			}
			return m
		}},
		{"counter", func(*testing.B) logMap { return &counter{max: int64(reqlog.DefaultConfig().MaxInFlight)} }},
		{"mutex", func(*testing.B) logMap { return newMutexMap() }},
		{"syncmap", func(*testing.B) logMap { return newSyncMap() }},
	}
	for _, procs := range []struct {
		name string
		n    int
	}{
		{"goroutines=1", 1},
		{"gomaxprocs=2", 2},
	} {
		b.Run(procs.name, func(b *testing.B) {
			for _, mm := range maps {
				b.Run(mm.name, func(b *testing.B) {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs.n))
					m := mm.new(b)
					// Requests in flight that stay for the whole run: the
					// map is never empty.
					for range 64 {
						m.Open("held")
					}
					b.ReportAllocs()
					cpu := startCPU(b)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							m.Remove(m.Open(_procedure))
						}
					})
					cpu.stop()
					if n := m.Len(); n != 64 {
						b.Fatalf("%d Logs held after the run, want the 64 held throughout", n)
					}
				})
			}
		})
	}
}
