package depmem

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/multierr"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		give Config
		want []string
	}{
		{Config{}, nil},
		{Config{NoHysteresis: true}, nil},
		{Config{OpenThreshold: 1e-9, NoHysteresis: true}, nil},
		{Config{CloseThreshold: 1, OpenThreshold: 0.9, NoHysteresis: true}, nil},
		{Config{CloseThreshold: 0.5, OpenThreshold: 0.6}, []string{"openThreshold: must be below closeThreshold 0.5, got 0.6"}},
		{Config{CloseThreshold: 1.5}, []string{"closeThreshold: must be in (0, 1], got 1.5"}},
		{Config{OpenThreshold: -0.1}, []string{"openThreshold: must be in (0, 1), got -0.1"}},
		{Config{OpenThreshold: 1}, []string{"openThreshold: must be in (0, 1), got 1"}},
		{Config{Hysteresis: 0.3}, []string{"hysteresis: 0.3 closes the gap between openThreshold 0.2 and closeThreshold 0.8"}},
		{Config{Hysteresis: -1}, []string{"hysteresis: must be in (0, 1), got -1"}},
		{Config{Hysteresis: 0.1, NoHysteresis: true}, []string{"noHysteresis: must be false when hysteresis is set, got hysteresis 0.1"}},
		{Config{CloseThreshold: 0.5, OpenThreshold: 0.5, NoHysteresis: true}, []string{"openThreshold: must be below closeThreshold 0.5, got 0.5"}},
		{Config{CloseThreshold: math.NaN(), OpenThreshold: math.NaN(), Hysteresis: math.NaN()}, []string{
			"closeThreshold: must be in (0, 1], got NaN", "openThreshold: must be in (0, 1), got NaN", "hysteresis: must be in (0, 1), got NaN"}},
		{Config{Buckets: -1, MinSamples: -2, MaxEdges: -3}, []string{"buckets: must be between 1 and 1000, got -1", "minSamples: must be at least 1, got -2", "maxEdges: must be at least 1, got -3"}},
		{Config{Window: time.Millisecond, Buckets: 10}, []string{"buckets: window 1ms in 10 buckets is under 1ms a bucket"}},
		{Config{Window: -time.Second}, []string{"window: must be positive, got -1s"}},
		{Config{Fleet: FleetConfig{URL: "ftp://x", Selector: "a=\"b\""}}, []string{`fleet.url: must be an http(s) URL, got "ftp://x"`}},
		{Config{Fleet: FleetConfig{URL: "http://x", Interval: -1, Timeout: -1, Selector: "a=\"b\""}}, []string{"fleet.interval: must be positive, got -1ns", "fleet.timeout: must be positive, got -1ns"}},
		{Config{Fleet: FleetConfig{URL: "http://x"}}, []string{`fleet.selector: required with fleet.url to pick this service's instances, e.g. service="checkout" (or give both queries)`}},
		{Config{Fleet: FleetConfig{URL: "http://x", FailuresQuery: "a", JointQuery: "b"}}, nil},
		{Config{Fleet: FleetConfig{URL: "http://user:secret@[::1", Selector: "a=\"b\""}}, []string{`fleet.url: must be an http(s) URL, got "(unparsable URL)"`}},
		{Config{Snapshot: SnapshotConfig{Interval: -time.Second}}, []string{"snapshot.interval: must be positive, got -1s"}},
	}
	for _, tt := range tests {
		err := tt.give.Validate()
		assert.Equal(t, tt.want, errorStrings(err), "%+v", tt.give)
	}
}

// TestConfigValidateKeysAreRelative: used alone, depmem names its keys from
// its own Config; errown puts "memory." in front.
func TestConfigValidateKeysAreRelative(t *testing.T) {
	err := Config{Window: -time.Second, Fleet: FleetConfig{URL: "http://x"}}.Validate()
	require.Error(t, err)
	for _, e := range errorStrings(err) {
		assert.NotContains(t, e, "memory.")
	}
	assert.Equal(t, "window: must be positive, got -1s", errorStrings(err)[0])
}

func errorStrings(err error) []string {
	var out []string
	for _, e := range multierr.Errors(err) {
		out = append(out, e.Error())
	}
	return out
}
