package stormsim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRadiusLog(t *testing.T) {
	l := newRadiusLog(3)
	for _, r := range []struct {
		root int64
		call string
		edge int
	}{
		// Root 1: a chain of two retried calls (A→B, then B→C below it,
		// twice), and a retried sibling of B→C: radius 2.
		{1, "1/0.0", 0}, {1, "1/0.0", 0}, {1, "1/0.0/0.0", 2}, {1, "1/0.0/1.0", 1},
		// Root 2: a fan-out whose two leaves are each retried once by
		// their own callers: radius 1.
		{2, "2/0.0/0.0", 1}, {2, "2/1.0/0.0", 1},
		{9, "9/0.0", 1},
	} {
		l.record(r.root, r.call, r.edge)
	}
	assert.Equal(t, Radius{Failed: 3, Max: 2, Mean: 1, Retried: 2, MeanRetried: 1.5}, l.radius([]int64{1, 2, 3}),
		"root 1 saw retries on 2 hops of one call path, root 2 on one of each of two, root 3 none; root 9 did not fail")
	assert.Equal(t, []int64{2, 4, 1}, []int64{l.retries[0].Load(), l.retries[1].Load(), l.retries[2].Load()})
	assert.Equal(t, Radius{}, l.radius(nil))

	l.reset()
	assert.Equal(t, Radius{Failed: 1}, l.radius([]int64{1}))
	assert.Zero(t, l.retries[0].Load())
}

func TestPathRadius(t *testing.T) {
	set := func(calls ...string) map[string]struct{} {
		m := make(map[string]struct{}, len(calls))
		for _, c := range calls {
			m[c] = struct{}{}
		}
		return m
	}
	tests := []struct {
		name  string
		calls map[string]struct{}
		want  int
	}{
		{name: "none", want: 0},
		{name: "one", calls: set("7/0.0"), want: 1},
		{name: "a chain", calls: set("7/0.0", "7/0.0/0.0", "7/0.0/0.0/0.0"), want: 3},
		{name: "a chain with a gap", calls: set("7/0.0", "7/0.0/0.0/0.0"), want: 2},
		{name: "siblings do not add up", calls: set("7/0.0/0.0", "7/0.0/1.0", "7/1.0/0.0", "7/1.0/0.1"), want: 1},
		{name: "the same callee twice is two call paths", calls: set("7/0.0", "7/0.1/0.0"), want: 1},
		{name: "the longest of several", calls: set("7/0.0", "7/0.0/1.0", "7/1.0", "7/1.0/0.0", "7/1.0/0.0/0.0"), want: 3},
		{name: "a prefix at a '/' only", calls: set("7/1.0", "7/1.0/0.0", "7/1.01/0.0"), want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, pathRadius(tt.calls))
		})
	}
}
