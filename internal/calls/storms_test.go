package calls

import (
	"sync"
	"testing"

	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type added struct {
	storm  ownership.Storm
	known  bool
	failed bool
}

func TestStormsTotal(t *testing.T) {
	eight := ownership.Storm{Served: 8, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 1}
	answered := ownership.Storm{Served: 5, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 2}
	tests := []struct {
		name      string
		give      []added
		notFailed int // the egress log's count
		want      ownership.Storm
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
			want:      ownership.Storm{Served: 4, Blind: 4},
			wantOK:    true,
		},
		{
			name:      "a failed call and two quiet successes",
			give:      []added{{eight, true, true}},
			notFailed: 2,
			want:      ownership.Storm{Served: 1 + 2 + 8, Blind: 1 + 2 + 8, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "a failed one: one more request",
			give:      []added{{wire.One, true, true}},
			want:      ownership.Storm{Served: 2, Blind: 2},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name: "an added call that did not fail is not counted twice",
			give: []added{{answered, true, false}},
			// The egress log counts the answered call and two quiet ones.
			notFailed: 3,
			want:      ownership.Storm{Served: 1 + 2 + 5, Blind: 1 + 2 + 9, Retries: 1, Radius: 1, BlindRadius: 2},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "egress count below the added calls that did not fail: no quiet call, never negative",
			give:      []added{{answered, true, false}, {answered, true, false}},
			notFailed: 1,
			want:      ownership.Storm{Served: 1 + 10, Blind: 1 + 18, Retries: 2, Radius: 1, BlindRadius: 2},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name: "figures add, radii take the largest",
			give: []added{
				{ownership.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}, true, true},
				{ownership.Storm{Served: 3, Blind: 9, Retries: 0, Radius: 0, BlindRadius: 3}, true, true},
				{ownership.Storm{Served: 7, Blind: 7, Retries: 4, Radius: 2, BlindRadius: 2}, true, false},
			},
			notFailed: 1,
			want:      ownership.Storm{Served: 13, Blind: 19, Retries: 5, Radius: 2, BlindRadius: 3},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name:      "an unknown failed call: unknown",
			give:      []added{{eight, true, true}, {ownership.Storm{}, false, true}, {eight, true, true}},
			notFailed: 4,
			wantAdded: true,
		},
		{
			name:      "an unknown call that did not fail: unknown too",
			give:      []added{{ownership.Storm{}, false, false}},
			notFailed: 1,
			wantAdded: true,
		},
		{
			name:      "an unknown call's figures are not added",
			give:      []added{{ownership.Storm{Served: 3, Blind: 1}, false, true}},
			wantAdded: true,
		},
		{
			name: "blind past the bound: unknown",
			give: []added{
				{ownership.Storm{Served: 1, Blind: wire.MaxStormServed / 2}, true, true},
				{ownership.Storm{Served: 1, Blind: wire.MaxStormServed / 2}, true, true},
			},
			wantAdded: true,
		},
		{
			name: "blind at the bound: known",
			give: []added{
				{ownership.Storm{Served: 1, Blind: wire.MaxStormServed/2 - 1}, true, true},
				{ownership.Storm{Served: 1, Blind: wire.MaxStormServed / 2}, true, true},
			},
			want:      ownership.Storm{Served: 3, Blind: wire.MaxStormServed},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name: "quiet calls take it past the bound",
			give: []added{
				{ownership.Storm{Served: 1, Blind: wire.MaxStormServed - 1}, true, true},
			},
			notFailed: 1,
			wantAdded: true,
		},
		{
			name:      "served above blind: unknown",
			give:      []added{{ownership.Storm{Served: 5, Blind: 3}, true, true}},
			wantAdded: true,
		},
		{
			name:      "radius above blind radius: unknown",
			give:      []added{{ownership.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 2, BlindRadius: 1}, true, true}},
			wantAdded: true,
		},
		{
			name: "radius and blind radius from different calls: the largest of each",
			give: []added{
				{ownership.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 4, BlindRadius: 4}, true, true},
				{ownership.Storm{Served: 2, Blind: 4, Retries: 1, Radius: 1, BlindRadius: 6}, true, true},
			},
			want:      ownership.Storm{Served: 5, Blind: 7, Retries: 2, Radius: 4, BlindRadius: 6},
			wantOK:    true,
			wantAdded: true,
		},
		{
			name: "blind radius at its bound: known",
			give: []added{
				{ownership.Storm{Served: 1, Blind: 2, BlindRadius: wire.MaxStormRadius}, true, true},
			},
			want:      ownership.Storm{Served: 2, Blind: 3, BlindRadius: wire.MaxStormRadius},
			wantOK:    true,
			wantAdded: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Log
			for _, a := range tt.give {
				s.AddStorm(a.storm, a.known, a.failed)
			}
			assert.Equal(t, tt.wantAdded, s.StormAdded())
			got, ok := s.StormTotal(tt.notFailed)
			assert.Equal(t, tt.wantOK, ok, "%+v", got)
			assert.Equal(t, tt.want, got)
			// Total only reads.
			again, againOK := s.StormTotal(tt.notFailed)
			assert.Equal(t, got, again)
			assert.Equal(t, ok, againOK)
		})
	}
}

// TestStormsTotalMatchesWire: whatever valid Storms are added, a known
// Total is a valid header value.
func TestStormsTotalMatchesWire(t *testing.T) {
	var s Log
	s.AddStorm(ownership.Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}, true, true)
	s.AddStorm(ownership.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}, true, false)
	got, ok := s.StormTotal(5)
	require.True(t, ok)
	assert.Equal(t, "16,25,2,1,2", wire.FormatStorm(got))
	back, ok := wire.ParseStorm(wire.FormatStorm(got))
	require.True(t, ok)
	assert.Equal(t, got, back)
}

// TestStormsConcurrentAdds: the calls of one request add from their own
// goroutines while others read; under -race, and with every figure
// summed and every radius kept.
func TestStormsConcurrentAdds(t *testing.T) {
	const (
		goroutines = 64
		perG       = 200
	)
	var s Log
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
				if st, ok := s.StormTotal(0); ok {
					// A partial sum is still a sum of valid Storms.
					if st.Served < 1 || st.Blind < st.Served {
						t.Errorf("partial Total %+v", st)
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
				s.AddStorm(ownership.Storm{Served: 3, Blind: 5, Retries: 1, Radius: r, BlindRadius: r + 1}, true, i%2 == 0)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()

	const n = goroutines * perG
	got, ok := s.StormTotal(n/2 + 7) // the not-failed half and 7 quiet calls
	require.True(t, ok)
	assert.Equal(t, ownership.Storm{Served: 1 + 7 + 3*n, Blind: 1 + 7 + 5*n, Retries: n, Radius: 49, BlindRadius: 50}, got)
	assert.True(t, s.StormAdded())
}

func TestStormsConcurrentUnknown(t *testing.T) {
	var s Log
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				s.AddStorm(wire.One, !(g == 17 && i == 50), true)
			}
		}()
	}
	wg.Wait()
	got, ok := s.StormTotal(0)
	assert.False(t, ok, "one unknown call among 3200: %+v", got)
	assert.Equal(t, ownership.Storm{}, got)
}

// TestStormsSumSaturates: the sums of many calls' figures must not wrap
// back into bounds.
func TestStormsSumSaturates(t *testing.T) {
	var s Log
	top := ownership.Storm{Served: wire.MaxStormServed, Blind: wire.MaxStormServed}
	for range 1 << 14 { // 2^14 × 2^50 = 2^64
		s.AddStorm(top, true, true)
	}
	got, ok := s.StormTotal(0)
	assert.False(t, ok, "%d calls of %d requests each read %+v", 1<<14, uint64(wire.MaxStormServed), got)
}
