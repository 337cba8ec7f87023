package ingress

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// The request's one allocation costs in proportion to its size (the bench
// package's floor chain, UnaryOverheadPaired, measures one of this size):
// it is in the allocator's 160-byte size class (145 to 160 bytes), the
// floor's: a change of class here changes the floor too.
func TestTrackedRequestSize(t *testing.T) {
	size := unsafe.Sizeof(tracked{})
	assert.True(t, size > 144 && size <= 160, "%d bytes: update bench's floorNode with its size class", size)
}
