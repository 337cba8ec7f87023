package calls

import (
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
	r.Served() // no witness: nothing to tell
	var told []string
	r.Witness(func(p string) { told = append(told, p) })
	r.Record("a:1")
	r.Served()
	assert.Empty(t, told, "served by its only peer")
	r.Record("a:1")
	r.Served()
	assert.Empty(t, told, "served by the peer that failed it first: no other")
	r.Record("b:2")
	r.Served()
	assert.Equal(t, []string{"a:1"}, told, "each other peer once")
	told = nil
	r.Record("c:3")
	r.Record("b:2")
	r.Served()
	assert.Equal(t, []string{"c:3"}, told, "the latest three: b:2 served, c:3 other")
}
