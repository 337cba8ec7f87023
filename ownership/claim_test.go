package ownership

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClaimString(t *testing.T) {
	tests := []struct {
		give      Claim
		want      string
		wantValue string
		wantSent  bool
	}{
		{ClaimClaimed, "claimed", "claimed", true},
		{ClaimUnclaimed, "unclaimed", "unclaimed", true},
		{ClaimMissing, "missing", "", false},
		{Claim(42), "missing", "", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.String())
		v, sent := tt.give.HeaderValue()
		assert.Equal(t, tt.wantValue, v)
		assert.Equal(t, tt.wantSent, sent)
	}
}
