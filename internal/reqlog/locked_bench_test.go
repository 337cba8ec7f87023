package reqlog

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// lockedMap is what Map was before it only counted its Logs: each shard
// kept its Logs in a slice under its own lock, taken to insert and again
// to remove. It is BenchmarkMap's baseline.
type lockedMap struct {
	shards [64]*lockedShard
}

type lockedShard struct {
	mu   sync.Mutex
	max  int
	logs []*Log
}

func newLockedMap() *lockedMap {
	m := &lockedMap{}
	for i := range m.shards {
		m.shards[i] = &lockedShard{max: 100000 / len(m.shards)}
	}
	return m
}

func (m *lockedMap) insert(l *Log) bool {
	idx := rand.Uint64() % uint64(len(m.shards))
	s := m.shards[idx]
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.logs) >= s.max {
		return false
	}
	l.shard = uint32(idx)
	s.logs = append(s.logs, l)
	return true
}

func (m *lockedMap) remove(l *Log) {
	s := m.shards[l.shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, held := range s.logs {
		if held == l {
			last := len(s.logs) - 1
			s.logs[i] = s.logs[last]
			s.logs[last] = nil
			s.logs = s.logs[:last]
			return
		}
	}
}

// _benchLog keeps BenchmarkMap's Logs on the heap.
var _benchLog atomic.Pointer[Log]

// BenchmarkMap is one request's Insert and Remove, with 64 Logs held
// throughout, in Map (counts) and in the shards of locks and slices it
// had before (locks), under b.RunParallel with GOMAXPROCS 1 and 2.
func BenchmarkMap(b *testing.B) {
	for _, procs := range []int{1, 2} {
		b.Run("gomaxprocs="+string(rune('0'+procs)), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			b.Run("counts", func(b *testing.B) {
				m, err := NewMap(Config{})
				if err != nil {
					b.Fatal(err)
				}
				for range 64 {
					m.Open("held")
				}
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						l := &Log{Procedure: "p"}
						_benchLog.Store(l) // allocated, as a request's is
						if !m.Insert(l) {
							panic("full")
						}
						m.Remove(l)
					}
				})
			})
			b.Run("locks", func(b *testing.B) {
				m := newLockedMap()
				for range 64 {
					m.insert(&Log{Procedure: "held"})
				}
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						l := &Log{Procedure: "p"}
						_benchLog.Store(l)
						if !m.insert(l) {
							panic("full")
						}
						m.remove(l)
					}
				})
			})
		})
	}
}
