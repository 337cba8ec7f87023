package calls

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
)

// MaxFailures is how many failed calls one request's egress log keeps;
// the rest are counted (inbound.egress_overflow), bounding its cost.
const MaxFailures = 64

// _inline is how many failures an EgressLog holds without allocating.
const _inline = 4

// chunk holds an EgressLog's failures (the first _inline in place) and
// its calls' Storm sums. Chunks are pooled so a failed request allocates
// nothing: taken on the first failure or Storm, under the log's lock, and
// given back by EgressLog.Release or Summary.Release. A closed log adds
// nothing to its chunk, so no late call lands in another log's chunk.
type chunk struct {
	inline   [_inline]Entry
	failures []Entry   // inline[:n] while they fit, then on the heap
	storms   stormSums // of the calls with something to report (AddStorm)
}

var chunks = sync.Pool{New: func() any { return new(chunk) }}

// put clears the used entries of c (keeping no strings alive) and pools it.
func (c *chunk) put() {
	clear(c.inline[:min(len(c.failures), _inline)])
	c.failures = nil
	c.storms = stormSums{}
	chunks.Put(c)
}

// The bits of EgressLog.state: _closed, _late (a call came after close),
// _chunked (the log got a chunk), and below them the count of calls that
// did not fail.
const (
	_closed    = uint64(1) << 63
	_late      = uint64(1) << 62
	_chunked   = uint64(1) << 61
	_countMask = _chunked - 1
)

// Counts says how many calls an EgressLog took, by what it did with them.
type Counts struct {
	// Stored is the failed calls kept: at most MaxFailures.
	Stored int
	// Overflow is the failed calls past MaxFailures: counted, not kept.
	Overflow int
	// OverflowUnsatisfied is how many Overflow calls had RCS false:
	// nobody retried them yet, and the inbound side cannot see them.
	OverflowUnsatisfied int
	// NotFailed is the calls that did not fail (Entry.Failed):
	// counted, not kept.
	NotFailed int
}

// Total is how many calls the EgressLog took.
func (c Counts) Total() int {
	return c.Stored + c.Overflow + c.NotFailed
}

// EgressLog is one inbound request's egress log: it keeps up to
// MaxFailures failed calls and counts the rest (Counts). It is safe for
// concurrent use and takes no calls once closed. A call that neither
// failed nor reported a Storm is one CAS on state; failures and Storms go
// to the chunk under the lock.
type EgressLog struct {
	// state counts the calls that did not fail, with the _closed,
	// _late and _chunked bits (_chunked stays set after Release).
	state atomic.Uint64

	mu       sync.Mutex
	handed   bool  // Close handed the failures over
	stored   int32 // failures kept, once the chunk went (Release, CloseSummary)
	overflow int32 // saturated at math.MaxInt32
	unsat    int32 // overflowed failures with RCS false, saturated
	// chunk is taken on the first failure or Storm, under mu; without
	// mu, _chunked says whether there was one.
	chunk *chunk
}

// Append adds the call e: kept if it failed and fewer than MaxFailures are
// kept, else counted. It returns false, dropping e, once the log is
// closed (its request finished).
func (l *EgressLog) Append(e Entry) bool {
	if !e.Failed() {
		for {
			s := l.state.Load()
			if s&_closed != 0 {
				l.state.Or(_late)
				return false
			}
			if l.state.CompareAndSwap(s, s+1) {
				return true
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.takeOpen()
	if !ok {
		return false
	}
	l.appendFailure(c, e)
	return true
}

// AppendStorm is AddStorm then Append under one lock: both, or neither
// when the log is closed.
func (l *EgressLog) AppendStorm(e Entry, f wire.Figures) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.takeOpen()
	if !ok {
		return false
	}
	failed := e.Failed()
	c.storms.add(f, failed)
	if !failed {
		// Counted whatever _closed says: only CloseSummary can have
		// set it since, and it then closes under the lock, after this.
		l.state.Add(1)
		return true
	}
	l.appendFailure(c, e)
	return true
}

// appendFailure keeps e in c, or counts it past MaxFailures. l.mu must
// be held.
func (l *EgressLog) appendFailure(c *chunk, e Entry) {
	if len(c.failures) >= MaxFailures {
		if l.overflow < math.MaxInt32 {
			l.overflow++
		}
		if !e.RCS && l.unsat < math.MaxInt32 {
			l.unsat++
		}
		return
	}
	c.failures = append(c.failures, e)
}

// Late reports whether any call came after Close, even if nothing is
// under way any more.
func (l *EgressLog) Late() bool {
	return l.state.Load()&_late != 0
}

// takeOpen returns l's chunk, giving it one if needed, and true; or, when
// l is closed, marks it late and returns false. l.mu must be held. The
// first chunk sets _chunked in the atomic step that reads _closed, and
// CloseSummary the reverse, so one of them sees the other.
func (l *EgressLog) takeOpen() (*chunk, bool) {
	if l.lateIfClosed() {
		return nil, false
	}
	c := l.chunk
	if c == nil {
		if _testHookTake != nil {
			_testHookTake(l)
		}
		c = chunks.Get().(*chunk)
		c.failures = c.inline[:0]
		l.chunk = c
		if l.state.Or(_chunked)&_closed != 0 {
			l.state.Or(_late)
			return nil, false // the chunk stays for Release
		}
	}
	return c, true
}

// Test hooks, nil outside tests, where the other side of a race is made:
// _testHookTake before an open log gets a chunk, _testHookClose before
// CloseSummary closes, _testHookQuiet before CloseQuiet closes a log
// without a chunk.
var _testHookTake, _testHookClose, _testHookQuiet func(*EgressLog)

// lateIfClosed reports whether l is closed, marking it late if so.
func (l *EgressLog) lateIfClosed() bool {
	if l.state.Load()&_closed == 0 {
		return false
	}
	l.state.Or(_late)
	return true
}

// AddStorm adds one call's storm Figures f, failed if the call failed,
// and reports false, adding nothing, once the log is closed. Add the
// Storm before Append, so a request closing in between counts the call
// as under way.
func (l *EgressLog) AddStorm(f wire.Figures, failed bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.takeOpen()
	if ok {
		c.storms.add(f, failed)
	}
	return ok
}

// StormAdded reports whether any call's Storm was added (false after
// Release).
func (l *EgressLog) StormAdded() bool {
	if l.state.Load()&_chunked == 0 { // no call reported anything: no lock
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.chunk != nil && l.chunk.storms.added
}

// StormTotal returns the request's storm Figures, notFailed being
// Counts.NotFailed: with no Storm added, one request each for the request
// and those calls. Unknown when a call's Storm was unknown or a sum
// overflows. Ask before Release, which forgets the Storms.
func (l *EgressLog) StormTotal(notFailed int) wire.Figures {
	if l.state.Load()&_chunked == 0 { // no call reported anything: no lock
		return quietStorm(notFailed)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stormTotalLocked(notFailed)
}

// stormTotalLocked is StormTotal. l.mu must be held.
func (l *EgressLog) stormTotalLocked(notFailed int) wire.Figures {
	c := l.chunk
	switch {
	case c != nil && c.storms.added:
		return c.storms.total(notFailed)
	case c == nil && l.state.Load()&_chunked != 0:
		// The chunk went (Release, Summary) with its Storms: unknown.
		return wire.Figures{}
	}
	return quietStorm(notFailed)
}

// quietStorm is the Figures of a request whose notFailed calls reported
// none: one request each.
func quietStorm(notFailed int) wire.Figures {
	n := 1 + uint64(notFailed)
	return wire.KnownFigures(wire.Storm{Served: n, Blind: n})
}

// Release gives a closed log's chunk back to the pool (an open log's is
// kept); take the failures and Storms (Close, StormTotal) first. An
// unreleased chunk is left to the garbage collector.
func (l *EgressLog) Release() {
	if l.state.Load()&_chunked == 0 { // nothing to give back: no lock
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state.Load()&_closed == 0 {
		return
	}
	if c := l.detachLocked(); c != nil {
		c.put()
	}
}

// detachLocked takes l's chunk, keeping its failure count. l.mu must be
// held and l closed (nothing then writes the chunk).
func (l *EgressLog) detachLocked() *chunk {
	c := l.chunk
	if c != nil {
		l.stored, l.chunk = int32(len(c.failures)), nil
	}
	return c
}

// failures returns the failed calls the log keeps. l.mu must be held.
func (l *EgressLog) failures() []Entry {
	if l.chunk != nil {
		return l.chunk.failures
	}
	return nil
}

// Last returns the latest kept failed call on edge, if any.
func (l *EgressLog) Last(edge ownership.Edge) (Entry, bool) {
	if l.state.Load()&_chunked == 0 { // no failure: no lock
		return Entry{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state.Load()&_closed != 0 {
		return Entry{}, false
	}
	failures := l.failures()
	for i := len(failures) - 1; i >= 0; i-- {
		if failures[i].Edge == edge {
			return failures[i], true
		}
	}
	return Entry{}, false
}

// Close stops the log taking calls and appends its kept failed calls to
// dst, in order; Counts then reports the rest. Close is idempotent; later
// calls append nothing.
func (l *EgressLog) Close(dst []Entry) []Entry {
	dst, _ = l.CloseCounts(dst)
	return dst
}

// CloseCounts is Close that also returns the final Counts.
func (l *EgressLog) CloseCounts(dst []Entry) ([]Entry, Counts) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.handed {
		l.handed = true
		l.state.Or(_closed)
		dst = append(dst, l.failures()...)
	}
	return dst, l.countsLocked()
}

// Summary is what an EgressLog hands over as it closes (CloseSummary).
type Summary struct {
	// Failures are the kept failed calls, in order, in memory taken
	// from the log: valid until Release, read-only. Empty if an
	// earlier Close handed them over.
	Failures []Entry
	// Counts are the log's final Counts.
	Counts Counts
	// Storm is the request's storm Figures (StormTotal).
	Storm wire.Figures

	chunk *chunk // the log's, taken at close: Release gives it back
}

// Release gives the Failures' memory back to the pool once done. It does
// nothing without a chunk or the second time. Release one Summary once,
// not each copy: copies share memory.
func (s *Summary) Release() {
	if s.chunk == nil {
		return
	}
	s.chunk.put()
	s.chunk, s.Failures = nil, nil
}

// CloseSummary is Close returning failures, Counts and Storm in one step;
// a log with no chunk closes with one atomic or. The chunk goes with the
// Summary (Release it); the log keeps only its Counts, and a later
// StormTotal reports unknown.
func (l *EgressLog) CloseSummary() Summary {
	if _testHookClose != nil {
		_testHookClose(l)
	}
	// Either this finds the chunk or the failure finds the log closed
	// (takeOpen).
	if s := l.state.Or(_closed); s&_chunked == 0 {
		n := notFailed(s)
		return Summary{Counts: Counts{NotFailed: n}, Storm: quietStorm(n)}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var failures []Entry
	if !l.handed { // closed above
		l.handed = true
		if f := l.failures(); len(f) > 0 {
			failures = f
		}
	}
	sum := Summary{Failures: failures, Counts: l.countsLocked()}
	sum.Storm = l.stormTotalLocked(sum.Counts.NotFailed)
	sum.chunk = l.detachLocked()
	return sum
}

// CloseQuiet closes the log in one CAS and reports true when no call
// failed or reported a Storm (no chunk); CloseSummary still returns the
// quiet Summary. A log with a chunk is left open and false returned:
// close it with CloseSummary.
func (l *EgressLog) CloseQuiet() bool {
	for {
		s := l.state.Load()
		if s&_chunked != 0 {
			return false
		}
		if _testHookQuiet != nil {
			_testHookQuiet(l)
		}
		if l.state.CompareAndSwap(s, s|_closed) {
			return true
		}
	}
}

// Counts returns how many calls the log took, final once closed (late
// calls are not counted).
func (l *EgressLog) Counts() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.countsLocked()
}

// countsLocked is Counts. l.mu must be held.
func (l *EgressLog) countsLocked() Counts {
	c := Counts{
		Stored:              int(l.stored),
		Overflow:            int(l.overflow),
		OverflowUnsatisfied: int(l.unsat),
		NotFailed:           notFailed(l.state.Load()),
	}
	if l.chunk != nil {
		c.Stored = len(l.chunk.failures)
	}
	return c
}

// notFailed returns the count of calls that did not fail in state s.
func notFailed(s uint64) int {
	return int(min(s&_countMask, math.MaxInt))
}

// Len returns how many calls the log has taken: Counts().Total().
func (l *EgressLog) Len() int {
	return l.Counts().Total()
}
