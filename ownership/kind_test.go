package ownership

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEdgeKindText(t *testing.T) {
	tests := []struct {
		give EdgeKind
		want string
	}{
		{KindUnknown, "unknown"},
		{KindFailClose, "fail-close"},
		{KindFailOpen, "fail-open"},
	}
	for _, tt := range tests {
		b, err := tt.give.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(b))
		var k EdgeKind
		require.NoError(t, k.UnmarshalText(b))
		assert.Equal(t, tt.give, k)
	}
}

func TestParseEdgeKindError(t *testing.T) {
	var k EdgeKind
	err := k.UnmarshalText([]byte("fail-closed"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"fail-closed"`)
}

func TestValidateHeaderName(t *testing.T) {
	tests := []struct {
		give    string
		wantErr string
	}{
		{"errown-claim", ""},
		{"x-a1", ""},
		{"", "claimHeader: must not be empty"},
		{"Errown-Claim", `claimHeader: must be lower-case letters, digits and '-', got "Errown-Claim"`},
		{"a b", `got "a b"`},
		{"rpc-claim", `claimHeader: "rpc-claim" starts with "rpc-", which yarpc reserves`},
		{"grpc-status", `claimHeader: "grpc-status" starts with "grpc-", which yarpc reserves`},
		{"0123456789012345678901234567890123456789012345678901234567890123456789", "at most 64 bytes, got 70"},
	}
	for _, tt := range tests {
		err := validateHeaderName("claimHeader", tt.give)
		if tt.wantErr == "" {
			assert.NoError(t, err, tt.give)
			continue
		}
		assert.ErrorContains(t, err, tt.wantErr)
	}
}
