package wire

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAttempt(t *testing.T) {
	tests := []struct {
		give   string
		want   int
		wantOK bool
	}{
		{"1", 1, true},
		{"2", 2, true},
		{"100", 100, true},
		{"007", 7, true},
		{"0", 0, false},
		{"101", 0, false},
		{"-1", 0, false},
		{"+2", 0, false},
		{"", 0, false},
		{"two", 0, false},
		{"2 ", 0, false},
		{"99999999999999999999", 0, false},
		{"\x00", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseAttempt(tt.give)
		assert.Equal(t, tt.want, got, "%q", tt.give)
		assert.Equal(t, tt.wantOK, ok, "%q", tt.give)
	}
}

func TestFormatAttemptRoundTrip(t *testing.T) {
	for n := 1; n <= MaxAttempt; n++ {
		got, ok := ParseAttempt(FormatAttempt(n))
		assert.True(t, ok, "attempt %d", n)
		assert.Equal(t, n, got)
	}
}

func FuzzParseAttempt(f *testing.F) {
	for _, s := range []string{"1", "2", "0", "-1", "abc", "100", "101", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := ParseAttempt(s)
		if !ok {
			require.Zero(t, n, "ParseAttempt(%q) = %d, false", s, n)
			return
		}
		require.GreaterOrEqual(t, n, 1, "ParseAttempt(%q), out of range", s)
		require.LessOrEqual(t, n, MaxAttempt, "ParseAttempt(%q), out of range", s)
		want, err := strconv.Atoi(s)
		require.NoError(t, err, "ParseAttempt(%q) = %d, strconv fails", s, n)
		require.Equal(t, want, n, "ParseAttempt(%q), strconv says %d", s, want)
	})
}
