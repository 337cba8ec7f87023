package calls

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
)

// MaxFailures is how many failed outbound calls the egress log of one
// request keeps; the rest are counted (inbound.egress_overflow), so what
// one request costs stays bounded.
const MaxFailures = 64

// _inline is how many failed calls an EgressLog holds without allocating: most
// requests see few outbound failures, if any.
const _inline = 4

// chunk is where an EgressLog keeps its failures, the first _inline in
// place, and the sums of its calls' Storms. Chunks are pooled so that an
// EgressLog stays small and a failed request allocates nothing: taken on
// the first failure or Storm, under the log's lock, and given back by
// EgressLog.Release or Summary.Release. A closed log puts nothing more
// into its chunk, so no late call lands in a chunk another log uses.
type chunk struct {
	inline   [_inline]Entry
	failures []Entry   // inline[:n] while they fit, then on the heap
	storms   stormSums // of the calls with something to report (AddStorm)
}

var chunks = sync.Pool{New: func() any { return new(chunk) }}

// put empties c and gives it back to the pool, keeping no strings alive:
// only the entries it used are cleared.
func (c *chunk) put() {
	clear(c.inline[:min(len(c.failures), _inline)])
	c.failures = nil
	c.storms = stormSums{}
	chunks.Put(c)
}

// The bits of EgressLog.state: _closed once the log is closed, _late once a call
// came after that, _chunked once the log has a chunk, and below them the
// count of calls that did not fail.
const (
	_closed    = uint64(1) << 63
	_late      = uint64(1) << 62
	_chunked   = uint64(1) << 61
	_countMask = _chunked - 1
)

// Counts says how many calls an EgressLog took, by what it did with them.
type Counts struct {
	// Stored is how many failed calls the EgressLog keeps: at most MaxFailures.
	Stored int
	// Overflow is how many failed calls came after MaxFailures were
	// stored: counted, not kept.
	Overflow int
	// OverflowUnsatisfied is how many of the Overflow calls had their
	// retry criteria unsatisfied (Entry.RCS false): calls nobody has
	// retried yet, which the inbound side cannot see.
	OverflowUnsatisfied int
	// NotFailed is how many calls did not fail (see Entry.Failed): they
	// succeeded, were answered or were abandoned. Counted, not kept.
	NotFailed int
}

// Total is how many calls the EgressLog took.
func (c Counts) Total() int {
	return c.Stored + c.Overflow + c.NotFailed
}

// EgressLog is the egress log of one inbound request: it keeps the calls
// that failed, up to MaxFailures, and counts the rest (see Counts). It is
// safe for concurrent use. Once closed it takes no more calls. A call that
// did not fail and reported no Storm is one compare-and-swap on the log's
// state; failures and Storms go to the chunk, under the lock.
type EgressLog struct {
	// state counts the calls that did not fail, with _closed set once the
	// log is closed, _late once a call came after and _chunked once it
	// has a chunk (it stays set after Release).
	state atomic.Uint64

	mu       sync.Mutex
	handed   bool  // Close handed the failures over
	stored   int32 // failures kept, once the chunk went (Release, CloseSummary)
	overflow int32 // saturated at math.MaxInt32
	unsat    int32 // overflowed failures with RCS false, saturated
	// chunk is from chunks on the first failure or Storm, or nil; under
	// mu. Without mu, state's _chunked says whether there was one.
	chunk *chunk
}

// Append adds the call e to the log: kept if it failed (Entry.Failed) and
// the log holds fewer than MaxFailures failures, else counted. It returns
// false, and drops e, when the log is already closed: the inbound request
// the call was made for has finished.
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

// AppendStorm adds the call e and its storm Figures f together, as
// AddStorm and Append would one after the other, under one lock: both or,
// when the log is already closed, neither.
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
		// Counted whatever _closed says: with the log found open, only
		// CloseSummary can have set it since, and, the chunk found, it
		// goes on to close under the lock, after this.
		l.state.Add(1)
		return true
	}
	l.appendFailure(c, e)
	return true
}

// appendFailure keeps the failed call e in c, or counts it past
// MaxFailures. l.mu must be held.
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

// Late reports whether a call came after Close: a failure or a Storm the
// log refused, or a call that did not fail. A request whose call ended
// after its log closed, before it was asked, says so here even when
// nothing is under way any more.
func (l *EgressLog) Late() bool {
	return l.state.Load()&_late != 0
}

// takeOpen returns l's chunk, giving it one if it has none, and true; or,
// marking l late, false when l is closed. l.mu must be held. The first
// chunk sets _chunked in the atomic step that reads _closed, and
// CloseSummary the reverse, so either the close finds the chunk or the
// call finds the log closed.
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

// Test hooks, nil but in tests. _testHookTake runs where a failure or
// Storm, its log found open, is about to give it a chunk; _testHookClose
// where CloseSummary is about to close the log; _testHookQuiet where
// CloseQuiet found no chunk and is about to close the log.
// Tests make the other side of the race there.
var _testHookTake, _testHookClose, _testHookQuiet func(*EgressLog)

// lateIfClosed reports whether l is closed, and if it is, marks it late: a
// call came after Close.
func (l *EgressLog) lateIfClosed() bool {
	if l.state.Load()&_closed == 0 {
		return false
	}
	l.state.Or(_late)
	return true
}

// AddStorm adds the storm Figures f of one call to the request's, failed
// whether the call failed, and reports false, adding nothing, when the
// log is already closed. Add the call's Storm before the call itself
// (Append): a request that closes in between counts the call as under
// way.
func (l *EgressLog) AddStorm(f wire.Figures, failed bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.takeOpen()
	if ok {
		c.storms.add(f, failed)
	}
	return ok
}

// StormAdded reports whether any call's Storm was added. After Release it
// reports false.
func (l *EgressLog) StormAdded() bool {
	if l.state.Load()&_chunked == 0 { // no call reported anything: no lock
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.chunk != nil && l.chunk.storms.added
}

// StormTotal returns the request's storm Figures, notFailed being the
// log's count of calls that did not fail (Counts.NotFailed): with no Storm
// added, the request and those calls, one request each. They are unknown
// when a call's Storm was unknown or a sum is out of bounds. Ask before
// Release, which forgets the Storms.
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
		// The chunk, and any Storms in it, went back (Release) or with a
		// Summary: unknown, not the quiet figure.
		return wire.Figures{}
	}
	return quietStorm(notFailed)
}

// quietStorm is the storm Figures of a request whose notFailed calls
// reported none: the request and those calls, one request each.
func quietStorm(notFailed int) wire.Figures {
	n := 1 + uint64(notFailed)
	return wire.KnownFigures(wire.Storm{Served: n, Blind: n})
}

// Release gives a closed log's chunk back for other logs to use; it does
// nothing to an open log. The failures and Storms it kept are gone: take
// them (Close, StormTotal) first. A log never released leaves its chunk
// to the garbage collector.
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

// detachLocked takes l's chunk, if any, from l, which keeps the count of
// its failures. l.mu must be held, and l closed: no call puts anything in
// a closed log's chunk (takeOpen).
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

// Last returns the latest failed call the log keeps on edge, and whether
// there is one.
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

// Close stops the log from taking calls and appends the failed calls it
// keeps to dst, in the order they were added; Counts then reports what
// else it took. Close is idempotent; calls after the first append
// nothing.
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
	// Failures are the failed calls the log kept, in the order they were
	// added, in memory the Summary takes from the log: valid until the
	// Summary's Release, not to be changed. Empty when an earlier Close
	// handed them over.
	Failures []Entry
	// Counts are the log's final Counts.
	Counts Counts
	// Storm is the request's storm Figures (StormTotal): unknown when a
	// call's Storm was unknown or a sum is out of bounds.
	Storm wire.Figures

	chunk *chunk // the log's, taken at close: Release gives it back
}

// Release gives the memory of the Summary's Failures back for other logs
// to use; call it once done with them. It does nothing to a Summary
// without failures or Storms, nor the second time. Release one Summary
// once, not each of its copies: a copy shares its memory.
func (s *Summary) Release() {
	if s.chunk == nil {
		return
	}
	s.chunk.put()
	s.chunk, s.Failures = nil, nil
}

// CloseSummary closes the log, as Close does, and returns its failures,
// Counts and Storm in one step; a log with no chunk closes with one atomic
// or. The chunk goes with the Summary (give it back with its Release):
// the log keeps only its Counts, and a later StormTotal reports unknown.
func (l *EgressLog) CloseSummary() Summary {
	if _testHookClose != nil {
		_testHookClose(l)
	}
	// Either this finds the chunk a failure or Storm gave the log, or
	// that call finds the log closed (see takeOpen).
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

// CloseQuiet closes the log and reports true when no call failed or
// reported a Storm to it (it has no chunk): then its Summary is the quiet
// one of its calls, which CloseSummary still returns, and the close took
// one compare-and-swap. It leaves a log with a chunk open and reports
// false: close it with CloseSummary.
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

// Counts returns how many calls the log has taken. Once the log is closed
// it is final: calls that arrive late are not counted.
func (l *EgressLog) Counts() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.countsLocked()
}

// countsLocked returns the counts: final once the log is closed. l.mu
// must be held.
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

// notFailed returns the count of calls that did not fail in the state s.
func notFailed(s uint64) int {
	return int(min(s&_countMask, math.MaxInt))
}

// Len returns how many calls the log has taken: Counts().Total().
func (l *EgressLog) Len() int {
	return l.Counts().Total()
}
