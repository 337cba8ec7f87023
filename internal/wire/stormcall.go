package wire

// StormCall folds a logical call's attempts into its Storm. In enforce
// mode each attempt is in both worlds and suppressed ones are added to
// the blind world (Blind); in observe mode each is in the blind world and
// the errown world ends where errown would have stopped (StopErrown).
// The zero value is ready; not safe for concurrent use.
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

// Attempt adds one attempt response's storm Figures.
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

// StopErrown ends the errown world after the attempts so far (observe
// mode).
func (c *StormCall) StopErrown() { c.errownDone = true }

// ErrownStopped reports whether StopErrown was called.
func (c *StormCall) ErrownStopped() bool { return c.errownDone }

// Blind adds n blind-only attempts after the last, each replaying it
// (enforce mode: the retries errown suppressed).
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

// Decided records one decision after the attempts so far: observe mode's
// stop (StopErrown), enforce mode's blind-only attempts (Blind).
func (c *StormCall) Decided(stop bool, blind int) {
	if stop {
		c.StopErrown()
	}
	c.Blind(blind)
}

// Trivial reports, without computing it, whether Storm is One: one
// attempt, no blind replay, its Storm One.
func (c *StormCall) Trivial() bool {
	return c.attempts == 1 && c.blindAttempts == 1 && c.errownAttempts == 1 && !c.unknown && c.last == One
}

// Stormy reports, without computing it, whether Storm is stormy
// (Figures.Stormy).
func (c *StormCall) Stormy() bool {
	return c.attempts == 0 || c.unknown || c.retries > 0 || c.errownAttempts > 1 ||
		c.blindRadius > 0 || c.blindAttempts > 1 || c.blind > MaxStormServed
}

// Attempts returns the attempts added.
func (c *StormCall) Attempts() int { return c.attempts }

// Prevented returns the blind-only requests made at this call beyond what
// callees below prevented: what this caller's decisions prevented (or
// would, in observe mode); 0 when the Storm is unknown.
func (c *StormCall) Prevented() uint64 {
	if c.own == 0 {
		return 0
	}
	if !c.Storm().Known {
		return 0
	}
	return c.own
}

// Storm returns the call's Figures: unknown with no attempts, an unknown
// attempt, or a figure out of bounds.
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

// add returns a+b saturated just past MaxStormServed, so overflow reads
// as out of bounds.
func add(a, b uint64) uint64 {
	if a > MaxStormServed || b > MaxStormServed {
		return MaxStormServed + 1
	}
	return a + b
}
