package wire

import (
	"strings"
	"testing"

	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestParseClaim(t *testing.T) {
	tests := []struct {
		give string
		want ownership.Claim
	}{
		{"claimed", ownership.ClaimClaimed},
		{"unclaimed", ownership.ClaimUnclaimed},
		{"", ownership.ClaimMissing},
		{"missing", ownership.ClaimMissing},
		{"Claimed", ownership.ClaimMissing},
		{"UNCLAIMED", ownership.ClaimMissing},
		{" claimed", ownership.ClaimMissing},
		{"claimed ", ownership.ClaimMissing},
		{"claimed,unclaimed", ownership.ClaimMissing},
		{"claimed\x00", ownership.ClaimMissing},
		{"\xff\xfe", ownership.ClaimMissing},
		{strings.Repeat("claimed", 1000), ownership.ClaimMissing},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ParseClaim(tt.give), "%q", tt.give)
	}
}

func FuzzParseClaim(f *testing.F) {
	for _, s := range []string{"claimed", "unclaimed", "", "Claimed", "\x00", strings.Repeat("x", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := ParseClaim(s)
		if v, ok := FormatClaim(c); ok {
			// Only the exact wire values parse, and they round-trip.
			require.Equal(t, s, v, "ParseClaim(%q) = %v, which encodes as %q", s, c, v)
			return
		}
		require.Equal(t, ownership.ClaimMissing, c, "ParseClaim(%q), want missing", s)
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
		wantClaim   ownership.Claim
		wantNoRetry bool
	}{
		{"no response", nil, ownership.ClaimMissing, false},
		{"no headers", with(), ownership.ClaimMissing, false},
		{"claimed", with(defaults.ClaimHeader, "claimed"), ownership.ClaimClaimed, false},
		{"unclaimed, pushback", with(defaults.ClaimHeader, "unclaimed", defaults.NoRetryHeader, NoRetryValue), ownership.ClaimUnclaimed, true},
		{"garbled values", with(defaults.ClaimHeader, "Claimed", defaults.NoRetryHeader, "yes"), ownership.ClaimMissing, false},
		{"another header's name", with("x-claim", "claimed", "x-no-retry", NoRetryValue), ownership.ClaimMissing, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			claim, noRetry := ResponseClaim(tt.give, defaults.ClaimHeader, defaults.NoRetryHeader)
			assert.Equal(t, tt.wantClaim, claim)
			assert.Equal(t, tt.wantNoRetry, noRetry)
		})
	}
}

func TestFormatClaim(t *testing.T) {
	tests := []struct {
		give      ownership.Claim
		want      string
		wantValue string
		wantSent  bool
	}{
		{ownership.ClaimClaimed, "claimed", "claimed", true},
		{ownership.ClaimUnclaimed, "unclaimed", "unclaimed", true},
		{ownership.ClaimMissing, "missing", "", false},
		{ownership.Claim(42), "missing", "", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.String())
		v, sent := FormatClaim(tt.give)
		assert.Equal(t, tt.wantValue, v)
		assert.Equal(t, tt.wantSent, sent)
	}
}

func TestResponseShed(t *testing.T) {
	shed := func(v string) *transport.Response {
		return &transport.Response{Headers: transport.NewHeaders().With(defaults.ShedHeader, v)}
	}
	tests := []struct {
		name    string
		give    *transport.Response
		code    yarpcerrors.Code
		claim   ownership.Claim
		noRetry bool
		want    bool
	}{
		{name: "an admission's shed", give: shed("queue_full"), code: yarpcerrors.CodeResourceExhausted, claim: ownership.ClaimClaimed, noRetry: true, want: true},
		{name: "a reason a newer callee adds", give: shed("something-new"), code: yarpcerrors.CodeResourceExhausted, claim: ownership.ClaimClaimed, noRetry: true, want: true},
		{name: "no marker: a handler's own", give: &transport.Response{}, code: yarpcerrors.CodeResourceExhausted, claim: ownership.ClaimClaimed, noRetry: true},
		{name: "an empty marker", give: shed(""), code: yarpcerrors.CodeResourceExhausted, claim: ownership.ClaimClaimed, noRetry: true},
		{name: "no response", code: yarpcerrors.CodeResourceExhausted, claim: ownership.ClaimClaimed, noRetry: true},
		{name: "without pushback", give: shed("retry"), code: yarpcerrors.CodeResourceExhausted, claim: ownership.ClaimClaimed},
		{name: "unclaimed", give: shed("retry"), code: yarpcerrors.CodeResourceExhausted, claim: ownership.ClaimUnclaimed, noRetry: true},
		{name: "no claim", give: shed("retry"), code: yarpcerrors.CodeResourceExhausted, noRetry: true},
		{name: "another code", give: shed("retry"), code: yarpcerrors.CodeUnavailable, claim: ownership.ClaimClaimed, noRetry: true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ResponseShed(tt.give, tt.code, tt.claim, tt.noRetry, defaults.ShedHeader), tt.name)
	}
}
