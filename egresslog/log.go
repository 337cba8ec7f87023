package egresslog

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/errown/errown/ownership"
)

// MaxFailures is how many failed calls a Log keeps. A request that makes
// more failed calls has the first MaxFailures kept and the rest counted
// in Counts.Overflow: what one request costs stays bounded whatever its
// handler does.
const MaxFailures = 64

// _inline is how many failed calls a Log holds without allocating: most
// requests see few outbound failures, if any.
const _inline = 4

// chunk is where a Log keeps its failures, the first _inline in place and
// the rest on the heap, and the sums of its calls' Storms. Chunks are
// pooled (chunks) rather than part of the Log so that a Log stays small,
// and a failed request allocates nothing: the chunk is taken on the first
// failure or Storm and given back on Release, both under the Log's lock,
// and a closed Log takes nothing more into it, so no late Append or
// AddStorm can land in a chunk another Log is using.
type chunk struct {
	inline   [_inline]Entry
	failures []Entry // inline[:n] while they fit, then on the heap
	storms   Storms  // of the calls with something to report (AddStorm)
}

var chunks = sync.Pool{New: func() any { return new(chunk) }}

// _closed is the bit of Log.notFailed that Close sets; the bits below it
// count the calls that did not fail.
const _closed = uint64(1) << 63

// Counts says how many calls a Log took, by what it did with them.
type Counts struct {
	// Stored is how many failed calls the Log keeps: at most MaxFailures.
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

// Total is how many calls the Log took.
func (c Counts) Total() int {
	return c.Stored + c.Overflow + c.NotFailed
}

// Log is the egress log of one inbound request: it keeps the calls that
// failed, up to MaxFailures, and counts the rest (see Counts). It is safe
// for concurrent use by the goroutines a handler fans out to. Once closed
// it takes no more calls.
type Log struct {
	// notFailed counts the calls that did not fail, with _closed set once
	// the Log is closed: a call that did not fail costs one atomic add.
	notFailed atomic.Uint64

	mu       sync.Mutex
	closed   bool
	late     bool   // a failure or Storm came after Close (see Late)
	stored   int32  // failures kept, as of Close
	overflow int32  // saturated at math.MaxInt32
	unsat    int32  // overflowed failures with RCS false, saturated
	final    uint64 // notFailed's count as of Close
	// chunk is from chunks on the first failure or Storm, or nil. Set
	// and cleared under mu; loaded without it only to skip the lock when
	// there is none.
	chunk atomic.Pointer[chunk]
}

// Append adds the call e to the log: kept if it failed (Entry.Failed) and
// the log holds fewer than MaxFailures failures, else counted. It returns
// false, and drops e, when the log is already closed: the inbound request
// the call was made for has finished.
func (l *Log) Append(e Entry) bool {
	if !e.Failed() {
		// Counted after Close has read the count only if Close has also
		// set _closed in the same word: then the call was late.
		return l.notFailed.Add(1)&_closed == 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.late = true
		return false
	}
	c := l.take()
	if len(c.failures) >= MaxFailures {
		if l.overflow < math.MaxInt32 {
			l.overflow++
		}
		if !e.RCS && l.unsat < math.MaxInt32 {
			l.unsat++
		}
		return true
	}
	c.failures = append(c.failures, e)
	return true
}

// Late reports whether a call came after Close: a failure or a Storm the
// log refused, or a call that did not fail counted past the final count.
// A request whose call ended after its log closed, before it was asked,
// says so here even when nothing is under way any more.
func (l *Log) Late() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed && (l.late || l.notFailed.Load()&^_closed != l.final)
}

// take returns l's chunk, giving it one if it has none. l.mu must be
// held.
func (l *Log) take() *chunk {
	c := l.chunk.Load()
	if c == nil {
		c = chunks.Get().(*chunk)
		c.failures = c.inline[:0]
		l.chunk.Store(c)
	}
	return c
}

// AddStorm adds the Storm of one call to the request's (Storms.Add), and
// reports false, adding nothing, when the log is already closed. Add the
// call's Storm before the call itself (Append): a request that closes in
// between counts the call as under way.
func (l *Log) AddStorm(st ownership.Storm, known, failed bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.late = true
		return false
	}
	l.take().storms.Add(st, known, failed)
	return true
}

// StormAdded reports whether any call's Storm was added. After Release it
// reports false.
func (l *Log) StormAdded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.chunk.Load()
	return c != nil && c.storms.Added()
}

// StormTotal returns the request's Storm (Storms.Total), notFailed being
// the log's count of calls that did not fail (Counts.NotFailed): with no
// Storm added, the request and those calls, one request each. Ask before
// Release, which forgets the Storms.
func (l *Log) StormTotal(notFailed int) (ownership.Storm, bool) {
	if l.chunk.Load() != nil { // else no call reported anything: no lock
		l.mu.Lock()
		defer l.mu.Unlock()
		if c := l.chunk.Load(); c != nil && c.storms.Added() {
			return c.storms.Total(notFailed)
		}
	}
	n := 1 + uint64(notFailed)
	return ownership.Storm{Served: n, Blind: n}, true
}

// Release gives a closed log's chunk back for other logs to use; it does
// nothing to an open log. The failures and Storms it kept are gone: take
// them (Close, StormTotal) first. A log never released leaves its chunk
// to the garbage collector.
func (l *Log) Release() {
	if l.chunk.Load() == nil { // nothing to give back: no lock
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.chunk.Load()
	if !l.closed || c == nil {
		return
	}
	l.chunk.Store(nil)
	*c = chunk{} // keep no strings alive from the pool
	chunks.Put(c)
}

// failures returns the failed calls the log keeps. l.mu must be held.
func (l *Log) failures() []Entry {
	if c := l.chunk.Load(); c != nil {
		return c.failures
	}
	return nil
}

// Last returns the latest failed call the log keeps on edge, and whether
// there is one.
func (l *Log) Last(edge Edge) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
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
func (l *Log) Close(dst []Entry) []Entry {
	dst, _ = l.CloseCounts(dst)
	return dst
}

// CloseCounts is Close that also returns the final Counts.
func (l *Log) CloseCounts(dst []Entry) ([]Entry, Counts) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return dst, l.countsLocked()
	}
	dst = append(dst, l.failures()...)
	l.closeLocked()
	return dst, l.countsLocked()
}

// CloseQuiet closes the log, as Close does, when it keeps no failed call,
// and returns its final Counts and true. A log that keeps some is left
// open, and CloseQuiet returns false: Close it with room for them.
func (l *Log) CloseQuiet() (Counts, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		if len(l.failures()) > 0 {
			return Counts{}, false
		}
		l.closeLocked()
	}
	return l.countsLocked(), l.stored == 0
}

// Counts returns how many calls the log has taken. Once the log is closed
// it is final: calls that arrive late are not counted.
func (l *Log) Counts() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.countsLocked()
}

// closeLocked closes the log: it takes the final counts. The chunk stays
// until Release. l.mu must be held.
func (l *Log) closeLocked() {
	l.closed = true
	l.final = l.notFailed.Or(_closed) &^ _closed
	l.stored = int32(len(l.failures()))
}

// countsLocked returns the counts: final once the log is closed. l.mu
// must be held.
func (l *Log) countsLocked() Counts {
	c := Counts{Overflow: int(l.overflow), OverflowUnsatisfied: int(l.unsat)}
	if l.closed {
		c.Stored, c.NotFailed = int(l.stored), int(min(l.final, math.MaxInt))
		return c
	}
	c.Stored = len(l.failures())
	c.NotFailed = int(min(l.notFailed.Load()&^_closed, math.MaxInt))
	return c
}

// Len returns how many calls the log has taken: Counts().Total().
func (l *Log) Len() int {
	return l.Counts().Total()
}
