package reqlog

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newMap(t *testing.T, cfg Config) *Map {
	m, err := NewMap(cfg)
	require.NoError(t, err)
	return m
}

func TestOpenRemove(t *testing.T) {
	m := newMap(t, Config{})
	a := m.Open("a")
	b := m.Open("b")
	require.NotNil(t, a)
	require.NotNil(t, b)
	assert.NotSame(t, a, b)
	assert.Equal(t, "a", a.Procedure)
	assert.Equal(t, 2, m.Len())
	assert.Same(t, m, a.owner)
	m.Remove(a)
	assert.Equal(t, uint32(_removed), a.shard, "removed")
	assert.Equal(t, 1, m.Len())
	m.Remove(a) // twice: nothing
	assert.Equal(t, 1, m.Len())
	m.Remove(b)
	assert.Equal(t, 0, m.Len())
}

func TestMaxInFlight(t *testing.T) {
	m := newMap(t, Config{Shards: 4, MaxInFlight: 3})
	var logs []*Log
	for i := 0; i < 3; i++ {
		l := m.Open("p")
		require.NotNil(t, l)
		logs = append(logs, l)
	}
	assert.Nil(t, m.Open("p"), "over the bound")
	assert.Equal(t, 3, m.Len(), "a refused open does not count")
	m.Remove(logs[0])
	assert.NotNil(t, m.Open("p"), "room again after a removal")
}

func TestConcurrentOpenRemoveStaysBounded(t *testing.T) {
	const bound = 50
	m := newMap(t, Config{Shards: 8, MaxInFlight: bound})
	var (
		wg   sync.WaitGroup
		held atomic.Int64 // opened and not yet removed, by the test's count
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				l := m.Open("p")
				if l == nil {
					continue
				}
				assert.LessOrEqual(t, held.Add(1), int64(bound), "more Logs held than the bound")
				held.Add(-1)
				m.Remove(l)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 0, m.Len())
	assert.Zero(t, m.full.Load())
	for i := range m.shards {
		assert.Zero(t, m.shards[i].n.Load(), "shard %d", i)
	}
}

func TestChurnAtTheBound(t *testing.T) {
	// Goroutines open and remove at the bound, so shards fill and empty
	// all the time: afterwards every count agrees with what is held.
	m := newMap(t, Config{Shards: 8, MaxInFlight: 16})
	var wg sync.WaitGroup
	held := make([][]*Log, 8)
	for w := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				l := m.Open("p")
				if l == nil {
					continue
				}
				if i%500 == 0 {
					held[w] = append(held[w], l) // kept to the end
					continue
				}
				m.Remove(l)
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, ls := range held {
		n += len(ls)
	}
	assert.Equal(t, n, m.Len())
	var full int64
	for _, s := range m.shards {
		if s.n.Load() == s.max {
			full++
		}
	}
	assert.Equal(t, full, m.full.Load(), "shards counted full")
}

func TestOpenAllocatesOnlyTheLog(t *testing.T) {
	// An Open and a Remove allocate the Log and nothing else.
	m := newMap(t, Config{})
	allocs := testing.AllocsPerRun(1000, func() { m.Remove(m.Open("p")) })
	assert.Equal(t, 1.0, allocs)
}

func TestConcurrentFillIsExact(t *testing.T) {
	// Goroutines racing to fill the map get exactly MaxInFlight Logs
	// between them: the bound is global although each shard keeps its own.
	const bound = 1000
	m := newMap(t, Config{Shards: 16, MaxInFlight: bound})
	total := fillConcurrently(func() func() bool {
		return func() bool { return m.Open("p") != nil }
	})
	assert.Equal(t, bound, total)
	assert.Equal(t, bound, m.Len())
	assert.Equal(t, int64(len(m.shards)), m.full.Load())
}

func TestConcurrentFillFromOneHomeIsExact(t *testing.T) {
	// Goroutines that all start from the same shard race for every slot
	// of it, then of the next: still exactly MaxInFlight Logs.
	const bound = 4000
	m := newMap(t, Config{Shards: 4, MaxInFlight: bound})
	total := fillConcurrently(func() func() bool {
		return func() bool {
			_, ok := m.insertFrom(0, &Log{})
			return ok
		}
	})
	assert.Equal(t, bound, total)
	for i := range m.shards {
		assert.Equal(t, m.shards[i].max, m.shards[i].n.Load(), "shard %d", i)
	}
}

// fillConcurrently runs 8 goroutines, each with its own insert from
// newInsert, calling it until it fails, and returns how many calls
// succeeded in all.
func fillConcurrently(newInsert func() func() bool) int {
	var (
		wg    sync.WaitGroup
		total atomic.Int64
	)
	for range 8 {
		insert := newInsert()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for insert() {
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(total.Load())
}

func TestShardsShareMaxInFlight(t *testing.T) {
	tests := []struct {
		give       Config
		wantShards int
		wantMax    []int
	}{
		{Config{Shards: 4, MaxInFlight: 10}, 4, []int{3, 3, 2, 2}},
		{Config{Shards: 4, MaxInFlight: 8}, 4, []int{2, 2, 2, 2}},
		{Config{Shards: 64, MaxInFlight: 8}, 8, []int{1, 1, 1, 1, 1, 1, 1, 1}},
		{Config{Shards: 4, MaxInFlight: 3}, 2, []int{2, 1}},
		{Config{Shards: 2, MaxInFlight: 1}, 1, []int{1}},
		{Config{}, DefaultConfig().Shards, nil},
	}
	for _, tt := range tests {
		m := newMap(t, tt.give)
		require.Len(t, m.shards, tt.wantShards, "%+v", tt.give)
		sum := 0
		for i := range m.shards {
			sum += int(m.shards[i].max)
			if tt.wantMax != nil {
				assert.Equal(t, tt.wantMax[i], int(m.shards[i].max), "%+v shard %d", tt.give, i)
			}
		}
		assert.Equal(t, tt.give.WithDefaults().MaxInFlight, sum, "%+v: the shares add up to the bound", tt.give)

		// Filled to the bound, every shard holds its share, and each Log
		// knows its Map and a shard of it.
		if tt.give.MaxInFlight == 0 {
			continue
		}
		for range tt.give.MaxInFlight {
			l := m.Open("p")
			require.NotNil(t, l)
			assert.Same(t, m, l.owner)
			assert.Less(t, int(l.shard), len(m.shards))
		}
		assert.Nil(t, m.Open("p"), "%+v: over the bound", tt.give)
		for i := range m.shards {
			assert.Equal(t, m.shards[i].max, m.shards[i].n.Load(), "%+v shard %d", tt.give, i)
		}
	}
}

func TestHomeShard(t *testing.T) {
	m := newMap(t, Config{Shards: 4, MaxInFlight: 8}) // two Logs per shard
	var (
		got  []uint64
		logs []*Log
	)
	for range 8 {
		l := &Log{}
		idx, ok := m.insertFrom(2, l)
		require.True(t, ok)
		assert.Equal(t, uint64(l.shard), idx, "the shard the Log went to")
		got = append(got, idx)
		logs = append(logs, l)
	}
	assert.Equal(t, []uint64{2, 2, 3, 3, 0, 0, 1, 1}, got, "the home first, then the next shards in turn")
	assert.Equal(t, int64(4), m.full.Load(), "every shard counted full")
	_, ok := m.insertFrom(2, &Log{})
	assert.False(t, ok, "every shard full")
	assert.Equal(t, 8, m.Len())

	m.Remove(logs[2]) // one Log leaves shard 3
	assert.Equal(t, int64(3), m.full.Load())
	l := &Log{}
	idx, ok := m.insertFrom(0, l)
	require.True(t, ok)
	assert.Equal(t, uint64(3), idx, "the one shard with room, from any home")
	assert.Equal(t, int64(4), m.full.Load())

	for _, l := range append(logs, l) {
		m.Remove(l)
	}
	assert.Zero(t, m.full.Load())
	assert.Zero(t, m.Len())
}

// Requests start in shards spread over the Map.
func TestHomeOf(t *testing.T) {
	m := newMap(t, Config{Shards: 8, MaxInFlight: 64})
	spread := map[uint64]bool{}
	for range 1000 {
		h := m.homeOf(nil)
		require.Less(t, h, uint64(8))
		spread[h] = true
	}
	assert.Len(t, spread, 8, "1000 requests reach all 8 shards")
	one := newMap(t, Config{Shards: 1, MaxInFlight: 4})
	assert.Zero(t, one.homeOf(nil), "one shard: always it")
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		give    Config
		wantErr []string
	}{
		{Config{}, nil},
		{Config{Shards: 1, MaxInFlight: 1}, nil},
		{Config{Shards: MaxShards}, nil},
		{Config{Shards: 3}, []string{"shards: must be a power of two between 1 and 1024, got 3"}},
		{Config{Shards: -4}, []string{"shards", "got -4"}},
		{Config{Shards: 2 * MaxShards}, []string{"got 2048"}},
		{Config{MaxInFlight: -1}, []string{"maxInFlight: must be positive, got -1"}},
		{Config{Shards: 6, MaxInFlight: -2}, []string{"got 6", "got -2"}},
	}
	for _, tt := range tests {
		err := tt.give.Validate()
		_, newErr := NewMap(tt.give)
		if len(tt.wantErr) == 0 {
			assert.NoError(t, err)
			assert.NoError(t, newErr)
			continue
		}
		for _, want := range tt.wantErr {
			assert.ErrorContains(t, err, want)
			assert.ErrorContains(t, newErr, want)
		}
	}
}

// TestConfigValidateKeysRelative: used alone, a Config names its keys from
// its own root; the "ingress." in front is errown.Config's to add.
func TestConfigValidateKeysRelative(t *testing.T) {
	assert.EqualError(t, Config{Shards: 3, MaxInFlight: -1}.Validate(),
		"shards: must be a power of two between 1 and 1024, got 3; maxInFlight: must be positive, got -1")
}

type parentKey struct{}

func TestOpenContext(t *testing.T) {
	m := newMap(t, Config{Shards: 2, MaxInFlight: 1})
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), parentKey{}, "v"))
	defer cancel()

	ctx, l := m.OpenContext(parent, "p")
	require.NotNil(t, l)
	assert.Same(t, l, FromContext(ctx))
	assert.Same(t, m, l.owner)
	assert.Equal(t, "p", l.Procedure)
	assert.Equal(t, "v", ctx.Value(parentKey{}), "the parent's values")
	assert.Equal(t, 1, m.Len())

	full, none := m.OpenContext(parent, "p")
	assert.Nil(t, none, "over the bound")
	assert.Equal(t, parent, full, "the context is handed back as it was")

	cancel()
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "the parent's cancellation")
	m.Remove(l)
	assert.Equal(t, 0, m.Len())
}

func TestRemoveInAnyOrder(t *testing.T) {
	// Logs of every shard, removed in any order: each removal takes one
	// from its own shard's count.
	m := newMap(t, Config{Shards: 4, MaxInFlight: 40})
	var held []*Log
	for range 40 {
		held = append(held, m.Open("p"))
	}
	want := make([]int64, len(m.shards))
	for _, l := range held {
		want[l.shard]++
	}
	for k, i := range rand.Perm(len(held)) {
		want[held[i].shard]--
		m.Remove(held[i])
		for s := range m.shards {
			assert.Equal(t, want[s], m.shards[s].n.Load(), "shard %d", s)
		}
		assert.Equal(t, len(held)-k-1, m.Len())
	}
	assert.Zero(t, m.full.Load())
}

func TestRemoveForeignLog(t *testing.T) {
	m := newMap(t, Config{Shards: 1})
	other := newMap(t, Config{Shards: 1})
	mine := m.Open("p")
	stranger := other.Open("p") // the same shard as mine, another map
	m.Remove(stranger)
	m.Remove(&Log{shard: mine.shard}) // never inserted
	assert.Equal(t, 1, m.Len(), "only the Log the map holds is removed")
	assert.Equal(t, 1, other.Len())
	m.Remove(mine)
	assert.Zero(t, m.Len())
}

// Insert takes a Log its caller allocated, to the same bound as Open, and
// Full says so before the caller allocates.
func TestInsertFull(t *testing.T) {
	m := newMap(t, Config{Shards: 2, MaxInFlight: 2})
	a, b, c := &Log{Procedure: "a"}, &Log{Procedure: "b"}, &Log{Procedure: "c"}
	assert.False(t, m.Full())
	require.True(t, m.Insert(a))
	require.True(t, m.Insert(b))
	assert.Equal(t, [2]uint32{0, 1}, [2]uint32{min(a.shard, b.shard), max(a.shard, b.shard)}, "one in each shard")
	assert.True(t, m.Full())
	assert.False(t, m.Insert(c), "over the bound")
	assert.Nil(t, m.Open("d"), "Open shares the bound")
	left := a.shard
	m.Remove(a)
	assert.False(t, m.Full())
	assert.True(t, m.Insert(c), "room again after a removal")
	assert.Equal(t, left, c.shard, "in the shard a left")
	assert.Equal(t, 2, m.Len())
}

// A refused Insert adds to its shard's count and takes the addition back;
// when a Remove meanwhile took the count below the share, the take-back is
// what leaves the share, and it counts the shard full no more.
func TestRefusedInsertTakesItsAdditionBack(t *testing.T) {
	m := newMap(t, Config{Shards: 1, MaxInFlight: 2})
	a, b := m.Open("a"), m.Open("b")
	require.NotNil(t, b)
	s := m.shards[0]
	require.Equal(t, int64(1), m.full.Load(), "the one shard full")

	s.n.Add(1)  // an Insert that found the shard full adds, then...
	m.Remove(a) // ...a Remove takes the count back to the share: still full
	assert.Equal(t, int64(1), m.full.Load())
	m.fullUnless(s.n.Add(-1), s) // ...and the Insert takes its addition back
	assert.Zero(t, m.full.Load(), "the take-back left the share")
	assert.False(t, m.Full())
	assert.Equal(t, 1, m.Len())
	assert.NotNil(t, m.Open("c"), "the free slot is taken")
	assert.True(t, m.Full())
}
