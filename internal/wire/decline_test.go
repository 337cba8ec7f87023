package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDeclineString(t *testing.T) {
	tests := []struct {
		give Decline
		want string
	}{
		{DeclineNone, "none"},
		{DeclineUnclaimed, "unclaimed"},
		{DeclineAttemptLimit, "attempt-limit"},
		{_declines, "none"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.String())
	}
}

func TestDeclines(t *testing.T) {
	assert.Equal(t, []Decline{DeclineUnclaimed, DeclineAttemptLimit}, Declines())
}

// A decline's tag never reads as a refusal's: failed_after_denied tags
// both by reason, and one tag is one cause.
func TestDeclineTagsAreNotRefusals(t *testing.T) {
	for _, d := range Declines() {
		for _, r := range Refusals() {
			assert.NotEqual(t, r.String(), d.String(), "decline %d and refusal %d share a tag", d, r)
		}
	}
}
