package calls

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRoutePeers(t *testing.T) {
	var r Route
	assert.Empty(t, r.Peers(nil), "no peer recorded")
	r.Record("a:1")
	r.Record("b:2")
	assert.Equal(t, []string{"a:1", "b:2"}, r.Peers(nil), "oldest first")
	r.Record("c:3")
	r.Record("d:4")
	assert.Equal(t, []string{"b:2", "c:3", "d:4"}, r.Peers(nil), "the latest three, oldest first")
	assert.Equal(t, "d:4", r.Last())
	assert.Equal(t, 4, r.Len())
}

func TestRouteServed(t *testing.T) {
	var r Route
	r.Served(nil) // no witness: nothing to tell
	var told []string
	r.Witness(func(p string) { told = append(told, p) })
	r.Record("a:1")
	r.Served(nil)
	assert.Empty(t, told, "served by its only peer")
	r.Record("a:1")
	r.Served(nil)
	assert.Empty(t, told, "served by the peer that failed it first: no other")
	r.Record("b:2")
	r.Served(nil)
	assert.Equal(t, []string{"a:1"}, told, "each other peer once")
	told = nil
	r.Record("c:3")
	r.Record("b:2")
	r.Served(nil)
	assert.Equal(t, []string{"c:3"}, told, "the latest three: b:2 served, c:3 other")
}

func TestRouteServedAlso(t *testing.T) {
	tests := []struct {
		name string
		give []string // peers recorded, in order
		want []string // told to the witness and to also
	}{
		{name: "one peer", give: []string{"a:1"}, want: nil},
		{name: "the same peer twice", give: []string{"a:1", "a:1"}, want: nil},
		{name: "another peer served", give: []string{"a:1", "b:2"}, want: []string{"a:1"}},
		{name: "two others", give: []string{"a:1", "c:3", "b:2"}, want: []string{"a:1", "c:3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var witnessed, also []string
			var r Route
			r.Witness(func(p string) { witnessed = append(witnessed, p) })
			for _, p := range tt.give {
				r.Record(p)
			}
			r.Served(func(p string) { also = append(also, p) })
			assert.Equal(t, tt.want, also, "told to also")
			assert.Equal(t, tt.want, witnessed, "told to the witness")
		})
	}
}

func TestRouteServedAlsoWithoutWitness(t *testing.T) {
	var also []string
	var r Route
	r.Record("a:1")
	r.Record("b:2")
	r.Served(func(p string) { also = append(also, p) })
	assert.Equal(t, []string{"a:1"}, also)
}

func TestRouteStrict(t *testing.T) {
	var r Route
	assert.False(t, r.Strict(), "the zero Route")
	r.Record("a:1")
	r.SetStrict(true)
	assert.True(t, r.Strict(), "asked")
	r.Record("b:2")
	assert.False(t, r.Strict(), "a peer chosen: the strict choice is made")
	r.SetStrict(true)
	r.SetStrict(false)
	assert.False(t, r.Strict(), "withdrawn")
	assert.ErrorIs(t, fmt.Errorf("wrapped: %w", ErrNoOtherPeer), ErrNoOtherPeer)
}

func TestRouteAvoidedOutlivesStrict(t *testing.T) {
	var r Route
	r.Record("a:1")
	assert.False(t, r.Avoided("a:1"), "not strict yet")
	r.SetStrict(true)
	r.Record("b:2")
	r.SetStrict(false)
	assert.True(t, r.Avoided("a:1"), "the peer recorded when made strict, after the strict choice")
	assert.False(t, r.Avoided("b:2"), "the strict attempt's own peer")
}
