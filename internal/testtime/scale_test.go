package testtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFactor(t *testing.T) {
	tests := []struct {
		give    string
		want    float64
		wantErr string
	}{
		{give: "", want: 1},
		{give: "1", want: 1},
		{give: "2.5", want: 2.5},
		{give: "0.5", wantErr: `ERROWN_TEST_TIMEOUT_SCALE: want a number at least 1, got "0.5"`},
		{give: "-3", wantErr: `got "-3"`},
		{give: "fast", wantErr: `got "fast"`},
		{give: "NaN", wantErr: `got "NaN"`},
		{give: "+Inf", wantErr: `got "+Inf"`},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := parseFactor(tt.give)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestScale(t *testing.T) {
	f := Factor()
	assert.GreaterOrEqual(t, f, 1.0)
	assert.Equal(t, time.Duration(float64(time.Second)*f), Scale(time.Second))
	assert.GreaterOrEqual(t, Scale(time.Second), time.Second, "a bound only widens")
}

func TestSleepScales(t *testing.T) {
	start := time.Now()
	Sleep(10 * time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), Scale(10*time.Millisecond))
}
