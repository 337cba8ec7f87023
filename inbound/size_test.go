package inbound

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// The request's one allocation costs in proportion to its size (the bench
// package's floor chain, UnaryOverheadPaired, measures one of this size):
// it stays within the allocator's 160-byte class.
func TestTrackedRequestSize(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(tracked{}), uintptr(160))
}
