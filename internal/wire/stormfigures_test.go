package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStormPreventedAndTrivial(t *testing.T) {
	tests := []struct {
		give          Storm
		wantPrevented uint64
		wantTrivial   bool
	}{
		{Storm{Served: 1, Blind: 1}, 0, true},
		{Storm{Served: 1, Blind: 1}, 0, true},
		{Storm{Served: 2, Blind: 2}, 0, false},                                        // a quiet subtree: more than one request
		{Storm{Served: 1, Blind: 1, Radius: 0, BlindRadius: 1}, 0, false},             // a radius says something
		{Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}, 0, false}, // a retry
		{Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}, 9, false},
		{Storm{Served: 1, Blind: 5, BlindRadius: 1}, 4, false},
		{Storm{}, 0, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.wantPrevented, tt.give.Prevented(), "%+v", tt.give)
		assert.Equal(t, tt.wantTrivial, tt.give.Trivial(), "%+v", tt.give)
	}
}
