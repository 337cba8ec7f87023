package wire

// StormCall folds the attempts of one logical call, as its caller made
// them, into the call's Storm. In enforce mode every attempt made is in
// both worlds, and the attempts errown suppressed are added to the blind
// world by Blind. In observe mode every attempt made is in the blind world,
// and the errown world ends where errown would have stopped (StopErrown).
//
// The zero value is ready to use. A StormCall is not safe for concurrent
// use: one call's attempts are sequential.
type StormCall struct {
	attempts       int
	errownAttempts int
	blindAttempts  int
	served         uint64
	blind          uint64
	retries        uint64
	radius         uint8
	blindRadius    uint8
	last           Storm
	own            uint64
	unknown        bool
	errownDone     bool
}

// Attempt adds the storm Figures of one attempt's response: unknown when
// the response carried none errown can read.
func (c *StormCall) Attempt(f Figures) {
	c.attempts++
	c.blindAttempts++
	if !f.Known {
		c.unknown = true
		return
	}
	s := f.Storm
	c.last = s
	c.blind = add(c.blind, s.Blind)
	c.blindRadius = max(c.blindRadius, s.BlindRadius)
	if c.errownDone {
		c.own = add(c.own, s.Blind)
		return
	}
	c.errownAttempts++
	c.served = add(c.served, s.Served)
	c.retries = add(c.retries, s.Retries)
	c.radius = max(c.radius, s.Radius)
}

// StopErrown ends the errown world after the attempts added so far: errown
// would have made no more (observe mode).
func (c *StormCall) StopErrown() { c.errownDone = true }

// ErrownStopped reports whether StopErrown was called.
func (c *StormCall) ErrownStopped() bool { return c.errownDone }

// Blind adds n attempts that only the blind world makes after the last
// one, each replaying it (enforce mode: the retries errown suppressed).
func (c *StormCall) Blind(n int) {
	if n <= 0 {
		return
	}
	c.blindAttempts += n
	extra := uint64(MaxStormServed + 1) // out of bounds: unknown
	if c.last.Blind <= MaxStormServed/uint64(n) {
		extra = uint64(n) * c.last.Blind
	}
	c.blind = add(c.blind, extra)
	c.own = add(c.own, extra)
}

// Decided records what the caller decided after the attempts added so
// far, one decision of the call: in observe mode, that errown would make
// no more (stop: StopErrown); in enforce mode, the attempts only the
// blind world makes (blind: Blind).
func (c *StormCall) Decided(stop bool, blind int) {
	if stop {
		c.StopErrown()
	}
	c.Blind(blind)
}

// Trivial reports whether the call's Storm is One, as Storm would say,
// without computing it: one attempt, with no blind replay, whose own Storm
// was One.
func (c *StormCall) Trivial() bool {
	return c.attempts == 1 && c.blindAttempts == 1 && c.errownAttempts == 1 && !c.unknown && c.last == One
}

// Stormy reports whether the call's Storm is stormy, as Storm would say
// (Figures.Stormy), without computing it: an attempt unknown or none, a
// retry spent or suppressed here or below, or a figure out of bounds.
func (c *StormCall) Stormy() bool {
	return c.attempts == 0 || c.unknown || c.retries > 0 || c.errownAttempts > 1 ||
		c.blindRadius > 0 || c.blindAttempts > 1 || c.blind > MaxStormServed
}

// Attempts returns the attempts added.
func (c *StormCall) Attempts() int { return c.attempts }

// Prevented returns the requests that only the blind world made at this
// call, beyond what the callees below prevented: what this caller's own
// decisions prevented (or would prevent, in observe mode). It is 0 when the
// call's Storm is unknown.
func (c *StormCall) Prevented() uint64 {
	if c.own == 0 {
		return 0
	}
	if !c.Storm().Known {
		return 0
	}
	return c.own
}

// Storm returns the call's storm Figures, unknown when no attempt was
// added, an attempt's were unknown, or a figure is out of bounds.
func (c *StormCall) Storm() Figures {
	if c.attempts == 0 || c.unknown {
		return Figures{}
	}
	s := Storm{Served: c.served, Blind: c.blind, Retries: c.retries}
	r, br := int(c.radius), int(c.blindRadius)
	if c.errownAttempts > 1 {
		s.Retries = add(s.Retries, uint64(c.errownAttempts-1))
		r++
	}
	if c.blindAttempts > 1 {
		br++
	}
	if s.Blind > MaxStormServed || r > MaxStormRadius || br > MaxStormRadius {
		return Figures{}
	}
	s.Radius, s.BlindRadius = uint8(r), uint8(br)
	return KnownFigures(s)
}

// add returns a+b, saturated just past MaxStormServed so that an overflow
// reads as out of bounds, never wraps.
func add(a, b uint64) uint64 {
	if a > MaxStormServed || b > MaxStormServed {
		return MaxStormServed + 1
	}
	return a + b
}
