package reqlog

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

func TestShardsFillTheirOwnBlocks(t *testing.T) {
	assert.Equal(t, uintptr(_cacheLine), unsafe.Sizeof(shard{}))
	for _, n := range []int{1, 8, 64, 1024} {
		m := newMap(t, Config{Shards: n})
		for i, s := range m.shards {
			assert.Zero(t, uintptr(unsafe.Pointer(s))%_cacheLine, "%d shards: shard %d starts mid-block", n, i)
		}
	}
}
