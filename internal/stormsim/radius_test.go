package stormsim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRadiusLog(t *testing.T) {
	l := newRadiusLog(3)
	for _, r := range []struct {
		root int64
		edge int
	}{{1, 0}, {1, 0}, {1, 2}, {2, 1}, {9, 1}} {
		l.record(r.root, r.edge)
	}
	assert.Equal(t, Radius{Failed: 3, Max: 2, Mean: 1, Retried: 2, MeanRetried: 1.5}, l.radius([]int64{1, 2, 3}),
		"root 1 saw retries on 2 hops, root 2 on one, root 3 none; root 9 did not fail")
	assert.Equal(t, []int64{2, 2, 1}, []int64{l.retries[0].Load(), l.retries[1].Load(), l.retries[2].Load()})
	assert.Equal(t, Radius{}, l.radius(nil))

	l.reset()
	assert.Equal(t, Radius{Failed: 1}, l.radius([]int64{1}))
	assert.Zero(t, l.retries[0].Load())
}
