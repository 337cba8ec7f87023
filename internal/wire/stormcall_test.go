package wire

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callStorm returns c's Storm, failing t when it is unknown.
func callStorm(t *testing.T, c *StormCall) Storm {
	t.Helper()
	f := c.Storm()
	require.True(t, f.Known, "the call's Storm is unknown")
	return f.Storm
}

// request returns the Storm a hop's inbound side sends for a request
// whose only call had Storm call: its own request and the call's.
func request(call Storm) Storm {
	call.Served++
	call.Blind++
	return call
}

// TestStormCallChain works the chain A → B → C → D by hand. D serves 4
// per attempt (itself and its quiet calls to E, F and G). C's call to D
// fails claimed once and is retried; C then fails unclaimed (it retried
// below), so B suppresses its retry of C, and A its retry of B, each
// adding the retry it suppressed to the blind world.
func TestStormCallChain(t *testing.T) {
	d := Storm{Served: 4, Blind: 4}

	// C → D: two attempts, both in both worlds.
	var c StormCall
	c.Attempt(KnownFigures(d)) // failed, claimed: retried
	c.Attempt(KnownFigures(d))
	assert.Equal(t, 2, c.Attempts())
	cCall := callStorm(t, &c)
	assert.Equal(t, Storm{Served: 8, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 1}, cCall)
	assert.Equal(t, uint64(0), c.Prevented(), "C prevented nothing")
	assert.False(t, c.ErrownStopped())
	cReq := request(cCall)
	require.Equal(t, Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1}, cReq)
	assert.Equal(t, "9,9,1,1,1", FormatStorm(cReq))

	// B → C: unclaimed, suppressed; the blind world replays it once.
	var b StormCall
	b.Attempt(KnownFigures(cReq))
	b.Blind(1)
	assert.Equal(t, 1, b.Attempts(), "Blind adds no attempt made")
	bCall := callStorm(t, &b)
	assert.Equal(t, Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}, bCall)
	assert.Equal(t, uint64(9), b.Prevented(), "B's own suppression prevented C's whole subtree once")
	assert.Equal(t, uint64(9), bCall.Prevented())
	bReq := request(bCall)
	require.Equal(t, Storm{Served: 10, Blind: 19, Retries: 1, Radius: 1, BlindRadius: 2}, bReq)

	// A → B: unclaimed, suppressed.
	var a StormCall
	a.Attempt(KnownFigures(bReq))
	a.Blind(1)
	aCall := callStorm(t, &a)
	assert.Equal(t, Storm{Served: 10, Blind: 38, Retries: 1, Radius: 1, BlindRadius: 3}, aCall)
	assert.Equal(t, uint64(19), a.Prevented(), "A's own suppression: B's blind subtree once")
	assert.Equal(t, uint64(28), aCall.Prevented(), "A's and B's together")
	aReq := request(aCall)
	assert.Equal(t, Storm{Served: 11, Blind: 39, Retries: 1, Radius: 1, BlindRadius: 3}, aReq)

	// Counted the other way: with errown, A, B and C once and D twice
	// (4 each); blind, every hop retries once: 1 + 2(1 + 2(1 + 2·4)).
	assert.Equal(t, uint64(1+1+1+2*4), aReq.Served)
	assert.Equal(t, uint64(1+2*(1+2*(1+2*4))), aReq.Blind)
	assert.Equal(t, "11,39,1,1,3", FormatStorm(aReq))
}

// TestStormCallChainObserve: the same chain in observe mode, where B and A
// do retry the unclaimed errors (and the callee answers the same again),
// reports the same figures: the blind world is what happened.
func TestStormCallChainObserve(t *testing.T) {
	cReq := Storm{Served: 9, Blind: 9, Retries: 1, Radius: 1, BlindRadius: 1}

	var b StormCall
	b.Attempt(KnownFigures(cReq)) // unclaimed: errown would stop here
	b.StopErrown()
	assert.True(t, b.ErrownStopped())
	b.Attempt(KnownFigures(cReq)) // the retry observe mode made anyway
	assert.Equal(t, 2, b.Attempts())
	bCall := callStorm(t, &b)
	assert.Equal(t, Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}, bCall)
	assert.Equal(t, uint64(9), b.Prevented(), "what B's suppression would prevent")

	var a StormCall
	bReq := request(bCall)
	a.Attempt(KnownFigures(bReq))
	a.StopErrown()
	a.Attempt(KnownFigures(bReq))
	assert.Equal(t, Storm{Served: 10, Blind: 38, Retries: 1, Radius: 1, BlindRadius: 3}, callStorm(t, &a))
	assert.Equal(t, uint64(19), a.Prevented())
}

func TestStormCall(t *testing.T) {
	four := Storm{Served: 4, Blind: 4}
	retried := Storm{Served: 5, Blind: 7, Retries: 1, Radius: 1, BlindRadius: 2}
	type op int
	const (
		opAttempt op = iota
		opBlind
		opStop
	)
	type step struct {
		op    op
		storm Figures
		blind int
	}
	attempt := func(s Storm) step { return step{op: opAttempt, storm: KnownFigures(s)} }
	unknown := step{op: opAttempt}
	blind := func(n int) step { return step{op: opBlind, blind: n} }
	stop := step{op: opStop}
	tests := []struct {
		name          string
		give          []step
		want          Storm
		wantOK        bool
		wantAttempts  int
		wantPrevented uint64
		wantStopped   bool
	}{
		{
			name:   "no attempt: unknown",
			wantOK: false,
		},
		{
			name:         "one quiet leaf attempt: one",
			give:         []step{attempt(One)},
			want:         One,
			wantOK:       true,
			wantAttempts: 1,
		},
		{
			name:         "one attempt: its Storm as it is",
			give:         []step{attempt(retried)},
			want:         retried,
			wantOK:       true,
			wantAttempts: 1,
		},
		{
			name:         "two leaf attempts: one retry, radius one in both worlds",
			give:         []step{attempt(One), attempt(One)},
			want:         Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantAttempts: 2,
		},
		{
			name:         "three attempts: retries below and here add, radii grow by one",
			give:         []step{attempt(retried), attempt(four), attempt(retried)},
			want:         Storm{Served: 14, Blind: 18, Retries: 2 + 2, Radius: 2, BlindRadius: 3},
			wantOK:       true,
			wantAttempts: 3,
		},
		{
			name:          "enforce: suppressed after one attempt, two blind retries",
			give:          []step{attempt(four), blind(2)},
			want:          Storm{Served: 4, Blind: 12, Radius: 0, BlindRadius: 1},
			wantOK:        true,
			wantAttempts:  1,
			wantPrevented: 8,
		},
		{
			name:          "enforce: claimed, then unclaimed and suppressed: the blind retry replays the last",
			give:          []step{attempt(four), attempt(retried), blind(1)},
			want:          Storm{Served: 9, Blind: 18, Retries: 2, Radius: 2, BlindRadius: 3},
			wantOK:        true,
			wantAttempts:  2,
			wantPrevented: 7,
		},
		{
			name:         "enforce: suppressed with no blind retry left (policy, pushback, budget): nothing prevented",
			give:         []step{attempt(four), blind(0)},
			want:         four,
			wantOK:       true,
			wantAttempts: 1,
		},
		{
			name:         "a negative blind count is none",
			give:         []step{attempt(retried), blind(-3)},
			want:         retried,
			wantOK:       true,
			wantAttempts: 1,
		},
		{
			name:          "observe: stopped after the first, two more made",
			give:          []step{attempt(four), stop, attempt(four), attempt(four)},
			want:          Storm{Served: 4, Blind: 12, Radius: 0, BlindRadius: 1},
			wantOK:        true,
			wantAttempts:  3,
			wantPrevented: 8,
			wantStopped:   true,
		},
		{
			name:          "observe: claimed, then unclaimed: errown would have made two",
			give:          []step{attempt(four), attempt(retried), stop, attempt(retried)},
			want:          Storm{Served: 9, Blind: 18, Retries: 2, Radius: 2, BlindRadius: 3},
			wantOK:        true,
			wantAttempts:  3,
			wantPrevented: 7,
			wantStopped:   true,
		},
		{
			name:         "observe: stopped on the last attempt: nothing prevented",
			give:         []step{attempt(four), attempt(four), stop},
			want:         Storm{Served: 8, Blind: 8, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK:       true,
			wantAttempts: 2,
			wantStopped:  true,
		},
		{
			name:          "observe: stopping twice is stopping once",
			give:          []step{attempt(four), stop, attempt(four), stop, attempt(four)},
			want:          Storm{Served: 4, Blind: 12, BlindRadius: 1},
			wantOK:        true,
			wantAttempts:  3,
			wantPrevented: 8,
			wantStopped:   true,
		},
		{
			name:         "an unknown attempt makes the call unknown",
			give:         []step{unknown},
			wantOK:       false,
			wantAttempts: 1,
		},
		{
			name:         "unknown first, known after: still unknown",
			give:         []step{unknown, attempt(four)},
			wantOK:       false,
			wantAttempts: 2,
		},
		{
			name:         "known first, unknown retry: unknown",
			give:         []step{attempt(four), unknown},
			wantOK:       false,
			wantAttempts: 2,
		},
		{
			name:         "enforce: an unknown attempt suppressed: unknown, nothing prevented",
			give:         []step{attempt(four), unknown, blind(1)},
			wantOK:       false,
			wantAttempts: 2,
		},
		{
			name:         "observe: an unknown retry after the stop: unknown, nothing prevented",
			give:         []step{attempt(four), stop, unknown},
			wantOK:       false,
			wantAttempts: 2,
			wantStopped:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c StormCall
			for _, s := range tt.give {
				switch s.op {
				case opStop:
					c.StopErrown()
				case opBlind:
					c.Blind(s.blind)
				default:
					c.Attempt(s.storm)
				}
			}
			got := c.Storm()
			assert.Equal(t, tt.wantOK, got.Known)
			if tt.wantOK {
				assert.Equal(t, tt.want, got.Storm)
			} else {
				assert.Equal(t, Figures{}, got, "an unknown Storm is the zero Storm")
			}
			assert.Equal(t, tt.wantAttempts, c.Attempts())
			assert.Equal(t, tt.wantPrevented, c.Prevented())
			assert.Equal(t, tt.wantStopped, c.ErrownStopped())
		})
	}
}

func TestStormCallOverflow(t *testing.T) {
	top := Storm{Served: MaxStormServed, Blind: MaxStormServed}
	tests := []struct {
		name   string
		give   func(c *StormCall)
		want   Storm
		wantOK bool
	}{
		{
			name:   "one attempt at the bound: known",
			give:   func(c *StormCall) { c.Attempt(KnownFigures(top)) },
			want:   top,
			wantOK: true,
		},
		{
			name: "two attempts at the bound: blind past it, unknown",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(top))
				c.Attempt(KnownFigures(top))
			},
		},
		{
			name: "two halves: exactly the bound",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(Storm{Served: MaxStormServed / 2, Blind: MaxStormServed / 2}))
				c.Attempt(KnownFigures(Storm{Served: MaxStormServed / 2, Blind: MaxStormServed / 2}))
			},
			want:   Storm{Served: MaxStormServed, Blind: MaxStormServed, Retries: 1, Radius: 1, BlindRadius: 1},
			wantOK: true,
		},
		{
			name: "one past the bound",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(Storm{Served: MaxStormServed / 2, Blind: MaxStormServed / 2}))
				c.Attempt(KnownFigures(Storm{Served: MaxStormServed / 2, Blind: MaxStormServed/2 + 1}))
			},
		},
		{
			name: "a blind retry past the bound",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(Storm{Served: 1, Blind: MaxStormServed/2 + 1}))
				c.Blind(1)
			},
		},
		{
			name: "many blind retries past the bound",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(Storm{Served: 1, Blind: MaxStormServed / 4}))
				c.Blind(9)
			},
		},
		{
			name: "figures past uint64 saturate, never wrap",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(Storm{Served: 1 << 63, Blind: 1 << 63}))
				c.Attempt(KnownFigures(Storm{Served: 1 << 63, Blind: 1 << 63})) // 2^64 would wrap to 0
			},
		},
		{
			name: "a figure past the bound stays past it",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(Storm{Served: 1, Blind: MaxStormServed + 1}))
				c.StopErrown()
				c.Attempt(KnownFigures(One))
			},
		},
		{
			name: "radius past its bound",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(Storm{Served: 1, Blind: 1, Radius: MaxStormRadius, BlindRadius: MaxStormRadius}))
				c.Attempt(KnownFigures(One))
			},
		},
		{
			name: "blind radius past its bound",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(Storm{Served: 1, Blind: 1, BlindRadius: MaxStormRadius}))
				c.Blind(1)
			},
		},
		{
			name: "blind radius at its bound: known",
			give: func(c *StormCall) {
				c.Attempt(KnownFigures(Storm{Served: 1, Blind: 1, BlindRadius: MaxStormRadius - 1}))
				c.Blind(1)
			},
			want:   Storm{Served: 1, Blind: 2, BlindRadius: MaxStormRadius},
			wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c StormCall
			tt.give(&c)
			got := c.Storm()
			assert.Equal(t, tt.wantOK, got.Known, "%+v", got)
			assert.Equal(t, tt.want, got.Storm)
			if !tt.wantOK {
				assert.Equal(t, uint64(0), c.Prevented(), "an unknown call prevents nothing")
			}
		})
	}
}

// TestStormCallBlindProductSaturates: Blind(n) multiplies n by the last
// attempt's blind count; the product must saturate like every sum.
func TestStormCallBlindProductSaturates(t *testing.T) {
	var c StormCall
	c.Attempt(KnownFigures(Storm{Served: 1, Blind: MaxStormServed}))
	c.Blind(1 << 14) // 2^14 × 2^50 = 2^64: wraps to 0 unless saturated
	f := c.Storm()
	assert.False(t, f.Known, "Blind(%d) after a blind count of %d reads %+v", 1<<14, uint64(MaxStormServed), f)
}

// TestStormCallFolds: whatever the valid Storms of the attempts, in either
// mode, the call's Storm is valid on the wire, and the call's own
// prevention is what its Storm prevents beyond what its errown-world
// attempts say their subtrees prevented.
func TestStormCallFolds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := func() Storm {
		served := 1 + r.Uint64N(1000)
		br := uint8(r.IntN(20))
		return Storm{
			Served:      served,
			Blind:       served + r.Uint64N(1000),
			Retries:     r.Uint64N(served),
			Radius:      uint8(r.IntN(int(br) + 1)),
			BlindRadius: br,
		}
	}
	for i := range 20000 {
		var c StormCall
		var belowPrevented uint64
		attempts := 1 + r.IntN(MaxAttempt/10)
		observe := r.IntN(2) == 0
		stopAt := 1 + r.IntN(attempts)
		var sum Storm
		for n := 1; n <= attempts; n++ {
			s := random()
			c.Attempt(KnownFigures(s))
			sum.Blind += s.Blind
			if !c.ErrownStopped() {
				belowPrevented += s.Prevented()
				sum.Served += s.Served
			}
			if observe && n == stopAt {
				c.StopErrown()
			}
		}
		blind := 0
		if !observe {
			blind = r.IntN(3)
			c.Blind(blind)
		}
		f := c.Storm()
		require.True(t, f.Known, "case %d", i)
		s := f.Storm
		back := ParseStorm(FormatStorm(s))
		require.True(t, back.Known, "case %d: %+v is not a valid Storm", i, s)
		require.Equal(t, f, back)
		assert.Equal(t, sum.Served, s.Served, "case %d", i)
		assert.Equal(t, s.Prevented()-belowPrevented, c.Prevented(), "case %d: %+v", i, s)
		assert.Equal(t, attempts, c.Attempts())
		if !observe && blind == 0 || observe && stopAt == attempts {
			assert.Equal(t, uint64(0), c.Prevented(), "case %d: nothing only the blind world made", i)
		}
	}
}

// Trivial and Stormy say exactly what Storm would: One and known, and
// stormy.
func TestStormCallTrivialAgreesWithStorm(t *testing.T) {
	storms := []Storm{One, {Served: 2, Blind: 2}, {Served: 3, Blind: 6, Retries: 1, Radius: 1, BlindRadius: 2}, {Served: 1, Blind: 2, BlindRadius: 1}}
	r := rand.New(rand.NewPCG(1, 2))
	trivial := 0
	for i := range 20000 {
		var c StormCall
		for range r.IntN(4) {
			if r.IntN(8) == 0 {
				c.StopErrown()
			}
			s, known := storms[r.IntN(len(storms))], r.IntN(10) != 0
			f := Figures{}
			if known {
				f = KnownFigures(s)
			}
			c.Attempt(f)
			if r.IntN(4) == 0 {
				c.Blind(r.IntN(3)) // suppressed retries of that attempt
			}
		}
		f := c.Storm()
		want := f == KnownFigures(One)
		require.Equal(t, f.Stormy(), c.Stormy(), "case %d: Stormy(), Storm() = %+v", i, f)
		require.Equal(t, want, c.Trivial(), "case %d: Trivial(), Storm() = %+v", i, f)
		require.Equal(t, want, f.Trivial(), "case %d: Storm() = %+v, its Trivial()", i, f)
		if want {
			trivial++
		}
	}
	require.NotZero(t, trivial, "no trivial call drawn: the test checks nothing")
}

// TestStormCallDecided: a decision records observe mode's stop as
// StopErrown does and enforce mode's blind attempts as Blind does.
func TestStormCallDecided(t *testing.T) {
	f := KnownFigures(Storm{Served: 3, Blind: 5, Retries: 1, Radius: 1, BlindRadius: 1})
	for _, tt := range []struct {
		name  string
		stop  bool
		blind int
		want  func(*StormCall)
	}{
		{"nothing", false, 0, func(*StormCall) {}},
		{"stop", true, 0, (*StormCall).StopErrown},
		{"blind", false, 2, func(c *StormCall) { c.Blind(2) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got, want StormCall
			got.Attempt(f)
			want.Attempt(f)
			got.Decided(tt.stop, tt.blind)
			tt.want(&want)
			got.Attempt(f)
			want.Attempt(f)
			assert.Equal(t, want, got)
		})
	}
}
