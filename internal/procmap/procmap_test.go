package procmap

import (
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMapBound(t *testing.T) {
	made := 0
	p := New(3, "_other", func(k string) *string { made++; return &k })
	_, ok := p.Peek("a")
	assert.False(t, ok, "nothing yet")
	a := p.Get("a")
	assert.Equal(t, "a", *a)
	assert.Same(t, a, p.Get("a"), "made once")
	got, ok := p.Peek("a")
	require.True(t, ok)
	assert.Same(t, a, got)
	p.Get("b")
	p.Get("c")
	_, ok = p.Peek("d")
	assert.False(t, ok, "full, and other not made yet")
	d := p.Get("d")
	assert.Equal(t, "_other", *d, "past the bound: other's")
	assert.Same(t, d, p.Get("e"))
	got, ok = p.Peek("f")
	require.True(t, ok)
	assert.Same(t, d, got)
	assert.Same(t, d, p.Get("_other"))
	assert.Equal(t, 4, p.Len(), "three keys and other")
	assert.Equal(t, 4, made)
}

func TestMapOtherWithinTheBound(t *testing.T) {
	p := New(2, "_other", func(k string) string { return k })
	assert.Equal(t, "_other", p.Get("_other"), "other asked for by name takes no key's room")
	assert.Equal(t, "a", p.Get("a"))
	assert.Equal(t, "b", p.Get("b"))
	assert.Equal(t, "_other", p.Get("c"))
	assert.Equal(t, 3, p.Len())
}

// TestMapConcurrent: concurrent Gets of the same keys see one value each
// (run with -race).
func TestMapConcurrent(t *testing.T) {
	p := New(1000, "_other", func(k string) *string { return &k })
	const goroutines = 8
	seen := make([][]*string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				seen[g] = append(seen[g], p.Get(strconv.Itoa(i)))
			}
		}()
	}
	wg.Wait()
	for g := 1; g < goroutines; g++ {
		for i := range seen[g] {
			assert.Same(t, seen[0][i], seen[g][i], "key %d", i)
		}
	}
	assert.Equal(t, 100, p.Len())
}
