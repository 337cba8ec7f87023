package memory

import (
	"testing"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
)

// TestConfigTinyOpenThresholdIsZero: the documented way to say "fail-open
// only when the caller never failed with the callee".
func TestConfigTinyOpenThresholdIsZero(t *testing.T) {
	th := ThresholdsOf(depmem.Config{OpenThreshold: 1e-9, NoHysteresis: true, MinSamples: 1})
	tests := []struct {
		failures, joint int64
		want            ownership.EdgeKind
	}{
		{1, 0, ownership.KindFailOpen},
		{999_999_999, 0, ownership.KindFailOpen},
		{999_999_999, 1, ownership.KindUnknown},
		{20, 1, ownership.KindUnknown},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Classify(ownership.KindUnknown, tt.failures, tt.joint, th), "%d of %d", tt.joint, tt.failures)
	}
}

// TestMemoryNoHysteresis: without hysteresis an edge leaves its kind as soon
// as its ratio crosses back (compare TestMemoryHysteresisHoldsKind).
func TestMemoryNoHysteresis(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{MinSamples: 10, NoHysteresis: true})
	observe(m, edgeA, 100, 80)
	assert.Equal(t, ownership.KindFailClose, m.Kind(edgeA))
	observe(m, edgeA, 4, 2) // 82/104 = 0.788: below 0.8
	assert.Equal(t, ownership.KindUnknown, m.Kind(edgeA))
}

func TestConfigThresholds(t *testing.T) {
	tests := []struct {
		name string
		give depmem.Config
		want Thresholds
	}{
		{"zero means the defaults", depmem.Config{}, Thresholds{Close: 0.8, Open: 0.2, Hysteresis: 0.05, MinSamples: 20}},
		{"set", depmem.Config{CloseThreshold: 0.9, OpenThreshold: 0.1, Hysteresis: 0.02, MinSamples: 5}, Thresholds{Close: 0.9, Open: 0.1, Hysteresis: 0.02, MinSamples: 5}},
		{"no hysteresis", depmem.Config{NoHysteresis: true}, Thresholds{Close: 0.8, Open: 0.2, Hysteresis: 0, MinSamples: 20}},
		{"tiny open threshold", depmem.Config{OpenThreshold: 1e-9}, Thresholds{Close: 0.8, Open: 1e-9, Hysteresis: 0.05, MinSamples: 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ThresholdsOf(tt.give))
		})
	}
}
