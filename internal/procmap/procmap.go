// Package procmap holds one value per procedure name (or per edge, a
// procedure's call to a callee's procedure) for the request path: read
// without a lock, added rarely, and bounded, since a procedure name may
// come from a client (an adapter's "METHOD /path").
package procmap

import (
	"sync"
	"sync/atomic"
)

// Map holds a value per key, made on first use, for at most limit keys;
// past them every other key shares the value of the key other. Reads load
// a read-only map; an addition copies it under a lock. It is safe for
// concurrent use.
type Map[K comparable, V any] struct {
	limit    int
	other    K
	newValue func(key K) V

	m  atomic.Pointer[map[K]V] // read-only; replaced under mu
	mu sync.Mutex
}

// New returns a Map of at most limit keys besides other, whose values
// newValue makes.
func New[K comparable, V any](limit int, other K, newValue func(key K) V) *Map[K, V] {
	p := &Map[K, V]{limit: limit, other: other, newValue: newValue}
	p.m.Store(&map[K]V{})
	return p
}

// Get returns the value of key, made and added if there is room, or
// other's past the bound.
func (p *Map[K, V]) Get(key K) V {
	if v, ok := (*p.m.Load())[key]; ok {
		return v
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := *p.m.Load()
	if v, ok := cur[key]; ok {
		return v
	}
	if p.full(cur) {
		key = p.other
		if v, ok := cur[key]; ok {
			return v
		}
	}
	v := p.newValue(key)
	next := make(map[K]V, len(cur)+1)
	for k, old := range cur {
		next[k] = old
	}
	next[key] = v
	p.m.Store(&next)
	return v
}

// Peek returns what Get would return without adding anything: key's
// value, or other's past the bound, and whether there is one.
func (p *Map[K, V]) Peek(key K) (V, bool) {
	cur := *p.m.Load()
	if v, ok := cur[key]; ok {
		return v, true
	}
	if p.full(cur) {
		v, ok := cur[p.other]
		return v, ok
	}
	var zero V
	return zero, false
}

// Len returns the number of keys with a value of their own, other
// included once it has one.
func (p *Map[K, V]) Len() int { return len(*p.m.Load()) }

// full reports whether cur has no room for another key but other.
func (p *Map[K, V]) full(cur map[K]V) bool {
	n := len(cur)
	if _, ok := cur[p.other]; ok {
		n--
	}
	return n >= p.limit
}
