package ownership

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStormHeaderValue(t *testing.T) {
	tests := []struct {
		give Storm
		want string
	}{
		{Storm{Served: 1, Blind: 1}, "1,1,0,0,0"},
		{Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}, "9,18,1,1,2"},
		{Storm{Served: 12, Blind: 340, Retries: 7, Radius: 3, BlindRadius: 10}, "12,340,7,3,10"},
		{Storm{Served: MaxStormServed, Blind: MaxStormServed, Retries: MaxStormServed - 1, Radius: MaxStormRadius, BlindRadius: MaxStormRadius}, "1125899906842624,1125899906842624,1125899906842623,255,255"},
		// HeaderValue writes what it is given, valid or not: the bounds
		// are ParseStorm's.
		{Storm{}, "0,0,0,0,0"},
		{Storm{Served: 1<<64 - 1, Blind: 1<<64 - 1, Retries: 1<<64 - 1, Radius: 255, BlindRadius: 255}, "18446744073709551615,18446744073709551615,18446744073709551615,255,255"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.HeaderValue(), "%+v", tt.give)
	}
}

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
