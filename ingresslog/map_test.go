package ingresslog

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newMap(t *testing.T, cfg Config) *Map {
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

func TestOpenGetRemove(t *testing.T) {
	m := newMap(t, Config{})
	a := m.Open("a")
	b := m.Open("b")
	require.NotNil(t, a)
	require.NotNil(t, b)
	assert.NotEqual(t, a.ID, b.ID, "IDs are unique")
	assert.Equal(t, "a", a.Procedure)
	assert.Equal(t, 2, m.Len())
	assert.Same(t, a, m.Get(a.ID))
	m.Remove(a)
	assert.Nil(t, m.Get(a.ID))
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
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[ID]bool{}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				l := m.Open("p")
				if l == nil {
					continue
				}
				assert.LessOrEqual(t, m.Len(), bound)
				mu.Lock()
				assert.False(t, ids[l.ID], "duplicate ID %d", l.ID)
				ids[l.ID] = true
				mu.Unlock()
				m.Remove(l)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 0, m.Len())
	for i := range m.shards {
		assert.Empty(t, m.shards[i].logs)
	}
}

func TestShardSpread(t *testing.T) {
	m := newMap(t, Config{Shards: 4})
	for i := 0; i < 40; i++ {
		m.Open("p")
	}
	for i := range m.shards {
		assert.Len(t, m.shards[i].logs, 10, "shard %d", i)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		give    Config
		wantErr []string
	}{
		{Config{}, nil},
		{Config{Shards: 1, MaxInFlight: 1}, nil},
		{Config{Shards: MaxShards}, nil},
		{Config{Shards: 3}, []string{"ingress.shards: must be a power of two between 1 and 65536, got 3"}},
		{Config{Shards: -4}, []string{"ingress.shards", "got -4"}},
		{Config{Shards: 2 * MaxShards}, []string{"got 131072"}},
		{Config{MaxInFlight: -1}, []string{"ingress.maxInFlight: must be positive, got -1"}},
		{Config{Shards: 6, MaxInFlight: -2}, []string{"got 6", "got -2"}},
	}
	for _, tt := range tests {
		err := tt.give.Validate()
		_, newErr := New(tt.give)
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

func TestContext(t *testing.T) {
	assert.Nil(t, FromContext(context.Background()))
	l := &Log{ID: 7}
	assert.Same(t, l, FromContext(NewContext(context.Background(), l)))
}

func TestNoRetry(t *testing.T) {
	var l Log
	assert.False(t, l.NoRetry())
	l.SetNoRetry()
	assert.True(t, l.NoRetry())
}

type parentKey struct{}

func TestOpenContext(t *testing.T) {
	m := newMap(t, Config{Shards: 2, MaxInFlight: 1})
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), parentKey{}, "v"))
	defer cancel()

	ctx, l := m.OpenContext(parent, "p")
	require.NotNil(t, l)
	assert.Same(t, l, FromContext(ctx))
	assert.Same(t, l, m.Get(l.ID))
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
	assert.Nil(t, m.Get(l.ID))
}

func TestRemoveInAnyOrder(t *testing.T) {
	// One shard holding more logs than fit inline, removed in an order
	// that moves logs around: every log still held stays found.
	m := newMap(t, Config{Shards: 1})
	var held []*Log
	for range 3 * _inlineLogs {
		held = append(held, m.Open("p"))
	}
	for _, i := range rand.Perm(len(held)) {
		m.Remove(held[i])
		held[i] = nil
		for _, l := range held {
			if l != nil {
				assert.Same(t, l, m.Get(l.ID))
			}
		}
	}
	assert.Equal(t, 0, m.Len())
	assert.Empty(t, m.shards[0].logs)
}

func TestRemoveForeignLog(t *testing.T) {
	m := newMap(t, Config{Shards: 1})
	other := newMap(t, Config{Shards: 1})
	mine := m.Open("p")
	stranger := other.Open("p") // same ID and slot as mine, another map
	m.Remove(stranger)
	m.Remove(&Log{ID: mine.ID})
	assert.Equal(t, 1, m.Len(), "only the Log the map holds is removed")
	assert.Same(t, mine, m.Get(mine.ID))
}
