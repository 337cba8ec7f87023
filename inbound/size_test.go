package inbound

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// The request's one allocation costs in proportion to its size (the bench
// package's floor chain, UnaryOverheadPaired, measures one of this size):
// it is 160 bytes, the floor's size: a change here changes the floor too.
func TestTrackedRequestSize(t *testing.T) {
	assert.Equal(t, uintptr(160), unsafe.Sizeof(tracked{}), "update bench's floorNode with it")
}
