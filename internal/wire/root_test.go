package wire

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRoot(t *testing.T) {
	tests := []struct {
		give   string
		want   uint64
		wantOK bool
	}{
		{"1", 1, true},
		{"9e3779b97f4a7c15", 0x9e3779b97f4a7c15, true},
		{"9E3779B97F4A7C15", 0x9e3779b97f4a7c15, true},
		{"ffffffffffffffff", 1<<64 - 1, true},
		{"00000000000000ff", 0xff, true},
		{"0", 0, false},
		{"0000000000000000", 0, false},
		{"1ffffffffffffffff", 0, false},
		{"", 0, false},
		{"0x1f", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1f ", 0, false},
		{"g", 0, false},
		{"\x00", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRoot(tt.give)
		assert.Equal(t, tt.want, got, "%q", tt.give)
		assert.Equal(t, tt.wantOK, ok, "%q", tt.give)
	}
}

func TestFormatRootRoundTrip(t *testing.T) {
	tests := []struct {
		give uint64
		want string
	}{
		{1, "1"},
		{0xff, "ff"},
		{0x9e3779b97f4a7c15, "9e3779b97f4a7c15"},
		{1<<64 - 1, "ffffffffffffffff"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, FormatRoot(tt.give))
		got, ok := ParseRoot(FormatRoot(tt.give))
		assert.True(t, ok, "%x", tt.give)
		assert.Equal(t, tt.give, got)
	}
}

func FuzzParseRoot(f *testing.F) {
	for _, s := range []string{"1", "0", "9e3779b97f4a7c15", "FFFFFFFFFFFFFFFF", "1ffffffffffffffff", "0x1", "-1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, ok := ParseRoot(s)
		if !ok {
			require.Zero(t, k, "ParseRoot(%q) = %d, false", s, k)
			return
		}
		require.NotZero(t, k, "ParseRoot(%q): a key of 0", s)
		require.LessOrEqual(t, len(s), 16, "ParseRoot(%q): too long", s)
		want, err := strconv.ParseUint(s, 16, 64)
		require.NoError(t, err, "ParseRoot(%q) = %x, strconv fails", s, k)
		require.Equal(t, want, k, "ParseRoot(%q), strconv says %x", s, want)
		require.False(t, strings.ContainsAny(s, "+-xX_"), "ParseRoot(%q): not plain digits", s)
		back, ok := ParseRoot(FormatRoot(k))
		require.True(t, ok)
		require.Equal(t, k, back, "ParseRoot(FormatRoot(%x))", k)
	})
}
