package memory

import (
	"testing"

	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
)

func TestClassify(t *testing.T) {
	th := Thresholds{Close: 0.8, Open: 0.2, Hysteresis: 0.05, MinSamples: 10}
	const (
		unknown = ownership.KindUnknown
		closed  = ownership.KindFailClose
		open    = ownership.KindFailOpen
	)
	tests := []struct {
		name     string
		prev     ownership.EdgeKind
		failures int64
		joint    int64
		want     ownership.EdgeKind
	}{
		{"no samples", unknown, 0, 0, unknown},
		{"below min samples, all joint", unknown, 9, 9, unknown},
		{"below min samples, none joint", unknown, 9, 0, unknown},
		{"at min samples, all joint", unknown, 10, 10, closed},
		{"at close threshold", unknown, 100, 80, closed},
		{"just below close threshold", unknown, 100, 79, unknown},
		{"just above close threshold", unknown, 100, 81, closed},
		{"at open threshold", unknown, 100, 20, open},
		{"just above open threshold", unknown, 100, 21, unknown},
		{"just below open threshold", unknown, 100, 19, open},
		{"middle", unknown, 100, 50, unknown},
		{"fail-close held within hysteresis", closed, 100, 76, closed},
		{"fail-close held at hysteresis edge", closed, 100, 75, closed},
		{"fail-close released past hysteresis", closed, 100, 74, unknown},
		{"fail-open held within hysteresis", open, 100, 24, open},
		{"fail-open held at hysteresis edge", open, 100, 25, open},
		{"fail-open released past hysteresis", open, 100, 26, unknown},
		{"fail-open flips straight to fail-close", open, 100, 90, closed},
		{"fail-close flips straight to fail-open", closed, 100, 10, open},
		{"classified edge forgets below min samples", closed, 5, 5, unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Classify(tt.prev, tt.failures, tt.joint, th))
		})
	}
}

func TestRatio(t *testing.T) {
	assert.Equal(t, 0.0, Ratio(0, 0))
	assert.Equal(t, 0.25, Ratio(4, 1))
	assert.Equal(t, 1.0, Ratio(3, 3))
}
