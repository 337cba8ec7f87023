package configkey

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSimilar(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{"errown", true}, // the key itself
		{"Errown", true},
		{"ERROWN", true},
		{"err_own", true},
		{"err-own", true},
		{"errown_", true},
		{"errwon", true}, // neighbours swapped
		{"erown", true},  // a letter dropped
		{"errrown", true},
		{"errowm", true},
		{"errors", false}, // two edits: an application's own key
		{"error", false},
		{"grown", false},
		{"service", false},
		{"", false},
		{"__", false},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			assert.Equal(t, tt.want, Similar(tt.give, "errown"))
		})
	}
}

func TestSimilarLongKeysAllowTwoEdits(t *testing.T) {
	assert.True(t, Similar("maxAtempt", "maxAttempts"))
	assert.True(t, Similar("max_attempts", "maxAttempts"))
	assert.False(t, Similar("maxBackoff", "maxAttempts"))
}

func TestClosest(t *testing.T) {
	known := []string{"claimHeader", "codeHeader", "stormHeader", "maxAttempts", "maxBackoff"}
	tests := []struct {
		give string
		want string
	}{
		{"claimHedaer", "claimHeader"},
		{"ClaimHeader", "claimHeader"},
		{"max_backoff", "maxBackoff"},
		{"maxAttempt", "maxAttempts"},
		{"timeout", ""},
		{"claimHeader", ""}, // known already: nothing to suggest
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			assert.Equal(t, tt.want, Closest(tt.give, known))
		})
	}
}
