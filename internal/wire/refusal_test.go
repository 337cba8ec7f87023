package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRefusalString(t *testing.T) {
	tests := []struct {
		give Refusal
		want string
	}{
		{RefusedNone, "none"},
		{RefusedBudget, "budget"},
		{RefusedDeadline, "deadline"},
		{RefusedPushback, "pushback"},
		{RefusedNotIdempotent, "not-idempotent"},
		{RefusedCode, "code"},
		{RefusedBodyTooLarge, "body-too-large"},
		{RefusedOverload, "overload"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.String())
	}
}

func TestRefusals(t *testing.T) {
	assert.Equal(t, []Refusal{RefusedBudget, RefusedDeadline, RefusedPushback, RefusedNotIdempotent, RefusedCode, RefusedBodyTooLarge, RefusedOverload}, Refusals())
}
