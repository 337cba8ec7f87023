package calls

import (
	"sync"
	"testing"

	"github.com/errown/errown/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type added struct {
	storm  wire.Figures
	failed bool
}

func TestStormsTotal(t *testing.T) {
	eight := wire.Storm{Served: 8, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 1}
	answered := wire.Storm{Served: 5, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 2}
	tests := []struct {
		name      string
		give      []added
		notFailed int // the egress log's count
		want      wire.Storm
		wantOK    bool
		wantAdded bool
	}{
		{
			name:   "a leaf: its own request",
			want:   wire.One,
			wantOK: true,
		},
		{
			name:      "three quiet successes: counted by the egress log alone",
			notFailed: 3,
			want:      wire.Storm{Served: 4, Blind: 4},
			wantOK:    true,
		},
		{
			name:      "a failed call and two quiet successes",
			give:      []added{{wire.KnownFigures(eight), true}},
			notFailed: 2,
			want:      wire.Storm{Served: 1 + 2 + 8, Blind: 1 + 2 + 8, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "a failed one: one more request",
			give:      []added{{wire.KnownFigures(wire.One), true}},
			want:      wire.Storm{Served: 2, Blind: 2},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name: "an added call that did not fail is not counted twice",
			give: []added{{wire.KnownFigures(answered), false}},
			// The egress log counts the answered call and two quiet ones.
			notFailed: 3,
			want:      wire.Storm{Served: 1 + 2 + 5, Blind: 1 + 2 + 9, Retries: 1, Radius: 1, BlindRadius: 2},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "egress count below the added calls that did not fail: no quiet call, never negative",
			give:      []added{{wire.KnownFigures(answered), false}, {wire.KnownFigures(answered), false}},
			notFailed: 1,
			want:      wire.Storm{Served: 1 + 10, Blind: 1 + 18, Retries: 2, Radius: 1, BlindRadius: 2},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name: "figures add, radii take the largest",
			give: []added{
				{wire.KnownFigures(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}), true},
				{wire.KnownFigures(wire.Storm{Served: 3, Blind: 9, Retries: 0, Radius: 0, BlindRadius: 3}), true},
				{wire.KnownFigures(wire.Storm{Served: 7, Blind: 7, Retries: 4, Radius: 2, BlindRadius: 2}), false},
			},
			notFailed: 1,
			want:      wire.Storm{Served: 13, Blind: 19, Retries: 5, Radius: 2, BlindRadius: 3},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "an unknown failed call: unknown",
			give:      []added{{wire.KnownFigures(eight), true}, {wire.Figures{}, true}, {wire.KnownFigures(eight), true}},
			notFailed: 4,
			wantAdded: true,
		},
		{
			name:      "an unknown call that did not fail: unknown too",
			give:      []added{{wire.Figures{}, false}},
			notFailed: 1,
			wantAdded: true,
		},
		{
			name:      "an unknown call's figures are not added",
			give:      []added{{wire.Figures{Storm: wire.Storm{Served: 3, Blind: 1}}, true}},
			wantAdded: true,
		},
		{
			name: "blind past the bound: unknown",
			give: []added{
				{wire.KnownFigures(wire.Storm{Served: 1, Blind: wire.MaxStormServed / 2}), true},
				{wire.KnownFigures(wire.Storm{Served: 1, Blind: wire.MaxStormServed / 2}), true},
			},
			wantAdded: true,
		},
		{
			name: "blind at the bound: known",
			give: []added{
				{wire.KnownFigures(wire.Storm{Served: 1, Blind: wire.MaxStormServed/2 - 1}), true},
				{wire.KnownFigures(wire.Storm{Served: 1, Blind: wire.MaxStormServed / 2}), true},
			},
			want:      wire.Storm{Served: 3, Blind: wire.MaxStormServed},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name: "quiet calls take it past the bound",
			give: []added{
				{wire.KnownFigures(wire.Storm{Served: 1, Blind: wire.MaxStormServed - 1}), true},
			},
			notFailed: 1,
			wantAdded: true,
		},
		{
			name:      "served above blind: unknown",
			give:      []added{{wire.KnownFigures(wire.Storm{Served: 5, Blind: 3}), true}},
			wantAdded: true,
		},
		{
			name:      "radius above blind radius: unknown",
			give:      []added{{wire.KnownFigures(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 2, BlindRadius: 1}), true}},
			wantAdded: true,
		},
		{
			name: "radius and blind radius from different calls: the largest of each",
			give: []added{
				{wire.KnownFigures(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 4, BlindRadius: 4}), true},
				{wire.KnownFigures(wire.Storm{Served: 2, Blind: 4, Retries: 1, Radius: 1, BlindRadius: 6}), true},
			},
			want:      wire.Storm{Served: 5, Blind: 7, Retries: 2, Radius: 4, BlindRadius: 6},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name: "blind radius at its bound: known",
			give: []added{
				{wire.KnownFigures(wire.Storm{Served: 1, Blind: 2, BlindRadius: wire.MaxStormRadius}), true},
			},
			want:      wire.Storm{Served: 2, Blind: 3, BlindRadius: wire.MaxStormRadius},
			wantOK:    true,
			wantAdded: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s EgressLog
			for _, a := range tt.give {
				s.AddStorm(a.storm, a.failed)
			}
			assert.Equal(t, tt.wantAdded, s.StormAdded())
			got := s.StormTotal(tt.notFailed)
			assert.Equal(t, tt.wantOK, got.Known, "%+v", got)
			assert.Equal(t, tt.want, got.Storm)
			// Total only reads.
			assert.Equal(t, got, s.StormTotal(tt.notFailed))
		})
	}
}

// TestStormsTotalMatchesWire: whatever valid Storms are added, a known
// Total is a valid header value.
func TestStormsTotalMatchesWire(t *testing.T) {
	var s EgressLog
	s.AddStorm(wire.KnownFigures(wire.Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}), true)
	s.AddStorm(wire.KnownFigures(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}), false)
	got := s.StormTotal(5)
	require.True(t, got.Known)
	assert.Equal(t, "16,25,2,1,2", wire.FormatStorm(got.Storm))
	assert.Equal(t, got, wire.ParseStorm(wire.FormatStorm(got.Storm)))
}

// TestStormsConcurrentAdds: the calls of one request add from their own
// goroutines while others read; under -race, and with every figure
// summed and every radius kept.
func TestStormsConcurrentAdds(t *testing.T) {
	const (
		goroutines = 64
		perG       = 200
	)
	var s EgressLog
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if f := s.StormTotal(0); f.Known {
					st := f.Storm
					// A partial sum is still a sum of valid Storms.
					if !assert.GreaterOrEqual(t, st.Served, uint64(1), "partial Total %+v", st) ||
						!assert.GreaterOrEqual(t, st.Blind, st.Served, "partial Total %+v", st) {
						return
					}
				}
				_ = s.StormAdded()
			}
		}()
	}
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				r := uint8((g*perG + i) % 50)
				s.AddStorm(wire.KnownFigures(wire.Storm{Served: 3, Blind: 5, Retries: 1, Radius: r, BlindRadius: r + 1}), i%2 == 0)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()

	const n = goroutines * perG
	got := s.StormTotal(n/2 + 7) // the not-failed half and 7 quiet calls
	assert.Equal(t, wire.KnownFigures(wire.Storm{Served: 1 + 7 + 3*n, Blind: 1 + 7 + 5*n, Retries: n, Radius: 49, BlindRadius: 50}), got)
	assert.True(t, s.StormAdded())
}

func TestStormsConcurrentUnknown(t *testing.T) {
	var s EgressLog
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				f := wire.KnownFigures(wire.One)
				if g == 17 && i == 50 {
					f = wire.Figures{}
				}
				s.AddStorm(f, true)
			}
		}()
	}
	wg.Wait()
	got := s.StormTotal(0)
	assert.Equal(t, wire.Figures{}, got, "one unknown call among 3200")
}

// TestStormsSumSaturates: the sums of many calls' figures must not wrap
// back into bounds.
func TestStormsSumSaturates(t *testing.T) {
	var s EgressLog
	top := wire.Storm{Served: wire.MaxStormServed, Blind: wire.MaxStormServed}
	for range 1 << 14 { // 2^14 × 2^50 = 2^64
		s.AddStorm(wire.KnownFigures(top), true)
	}
	got := s.StormTotal(0)
	assert.False(t, got.Known, "%d calls of %d requests each read %+v", 1<<14, uint64(wire.MaxStormServed), got)
}
