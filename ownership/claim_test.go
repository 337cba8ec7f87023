package ownership

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/api/transport"
)

func TestParseClaim(t *testing.T) {
	tests := []struct {
		give string
		want Claim
	}{
		{"claimed", ClaimClaimed},
		{"unclaimed", ClaimUnclaimed},
		{"", ClaimMissing},
		{"missing", ClaimMissing},
		{"Claimed", ClaimMissing},
		{"UNCLAIMED", ClaimMissing},
		{" claimed", ClaimMissing},
		{"claimed ", ClaimMissing},
		{"claimed,unclaimed", ClaimMissing},
		{"claimed\x00", ClaimMissing},
		{"\xff\xfe", ClaimMissing},
		{strings.Repeat("claimed", 1000), ClaimMissing},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ParseClaim(tt.give), "%q", tt.give)
	}
}

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

func FuzzParseClaim(f *testing.F) {
	for _, s := range []string{"claimed", "unclaimed", "", "Claimed", "\x00", strings.Repeat("x", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := ParseClaim(s)
		if v, ok := c.HeaderValue(); ok {
			// Only the exact wire values parse, and they round-trip.
			if v != s {
				t.Fatalf("ParseClaim(%q) = %v, which encodes as %q", s, c, v)
			}
			return
		}
		if c != ClaimMissing {
			t.Fatalf("ParseClaim(%q) = %v, want missing", s, c)
		}
	})
}

func TestParseNoRetry(t *testing.T) {
	assert.True(t, ParseNoRetry(NoRetryValue))
	for _, v := range []string{"", "True", "TRUE", "1", "yes", " true", "false"} {
		assert.False(t, ParseNoRetry(v), "%q", v)
	}
}

func TestResponseClaim(t *testing.T) {
	with := func(kv ...string) *transport.Response {
		h := transport.NewHeaders()
		for i := 0; i < len(kv); i += 2 {
			h = h.With(kv[i], kv[i+1])
		}
		return &transport.Response{Headers: h}
	}
	for _, tt := range []struct {
		name        string
		give        *transport.Response
		wantClaim   Claim
		wantNoRetry bool
	}{
		{"no response", nil, ClaimMissing, false},
		{"no headers", with(), ClaimMissing, false},
		{"claimed", with(DefaultClaimHeader, "claimed"), ClaimClaimed, false},
		{"unclaimed, pushback", with(DefaultClaimHeader, "unclaimed", DefaultNoRetryHeader, NoRetryValue), ClaimUnclaimed, true},
		{"garbled values", with(DefaultClaimHeader, "Claimed", DefaultNoRetryHeader, "yes"), ClaimMissing, false},
		{"another header's name", with("x-claim", "claimed", "x-no-retry", NoRetryValue), ClaimMissing, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			claim, noRetry := ResponseClaim(tt.give, DefaultClaimHeader, DefaultNoRetryHeader)
			assert.Equal(t, tt.wantClaim, claim)
			assert.Equal(t, tt.wantNoRetry, noRetry)
		})
	}
}
