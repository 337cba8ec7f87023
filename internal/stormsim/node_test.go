package stormsim

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNodeFails(t *testing.T) {
	tests := []struct {
		name string
		give *node
		want int // failures of 10000 requests
	}{
		{name: "never", give: &node{name: "A"}, want: 0},
		{name: "always", give: &node{name: "A", fail: 1}, want: 10000},
		{name: "a tenth", give: &node{name: "A", fail: 0.1, seed: 1}, want: 1054},
		{name: "another seed", give: &node{name: "A", fail: 0.1, seed: 2}, want: 976},
		{name: "another node", give: &node{name: "B", fail: 0.1, seed: 1}, want: 992},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := 0
			for i := range 10000 {
				if tt.give.fails(strconv.Itoa(i) + "@1") {
					got++
				}
			}
			assert.Equal(t, tt.want, got, "the draws are seeded: the same every run")
		})
	}
}

func TestRootOf(t *testing.T) {
	assert.Equal(t, int64(17), rootOf("17@1"))
	assert.Equal(t, int64(17), rootOf("17@1/0.1@2"))
}
