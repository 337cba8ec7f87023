package egresslog

import (
	"math"
	"sync"
	"sync/atomic"
)

// MaxFailures is how many failed calls a Log keeps. A request that makes
// more failed calls has the first MaxFailures kept and the rest counted
// in Counts.Overflow: what one request costs stays bounded whatever its
// handler does.
const MaxFailures = 64

// _inline is how many failed calls a Log holds without allocating: most
// requests see few outbound failures, if any.
const _inline = 4

// chunk is where a Log keeps its first _inline failures. Chunks are pooled
// (chunks) rather than part of the Log so that a Log stays small: the
// chunk is taken on the first failure and given back on Close, both under
// the Log's lock, and a closed Log never touches it again, so no late
// Append can land in a chunk another Log is using.
type chunk [_inline]Entry

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
	final    Counts  // once closed
	failures []Entry // in chunk while they fit, then on the heap
	chunk    *chunk  // from chunks, or nil
	overflow int
	unsat    int // overflowed failures with RCS false
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
		return false
	}
	if len(l.failures) >= MaxFailures {
		l.overflow++
		if !e.RCS {
			l.unsat++
		}
		return true
	}
	if l.failures == nil {
		l.chunk = chunks.Get().(*chunk)
		l.failures = l.chunk[:0]
	}
	l.failures = append(l.failures, e)
	return true
}

// Last returns the latest failed call the log keeps on edge, and whether
// there is one.
func (l *Log) Last(edge Edge) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.failures) - 1; i >= 0; i-- {
		if l.failures[i].Edge == edge {
			return l.failures[i], true
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
		return dst, l.final
	}
	l.closed = true
	l.final = l.countsLocked(l.notFailed.Or(_closed))
	dst = append(dst, l.failures...)
	l.release()
	return dst, l.final
}

// CloseQuiet closes the log, as Close does, when it keeps no failed call,
// and returns its final Counts and true. A log that keeps some is left
// open, and CloseQuiet returns false: Close it with room for them.
func (l *Log) CloseQuiet() (Counts, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.final, l.final.Stored == 0
	}
	if len(l.failures) > 0 {
		return Counts{}, false
	}
	l.closed = true
	l.final = l.countsLocked(l.notFailed.Or(_closed))
	l.release()
	return l.final, true
}

// Counts returns how many calls the log has taken. Once the log is closed
// it is final: calls that arrive late are not counted.
func (l *Log) Counts() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return l.final
	}
	return l.countsLocked(l.notFailed.Load())
}

// countsLocked returns the counts, given notFailed's word. l.mu must be
// held.
func (l *Log) countsLocked(word uint64) Counts {
	n := word &^ _closed
	return Counts{
		Stored:              len(l.failures),
		Overflow:            l.overflow,
		OverflowUnsatisfied: l.unsat,
		NotFailed:           int(min(n, math.MaxInt)),
	}
}

// release gives the chunk back and forgets the failures. l.mu must be held
// or l owned exclusively.
func (l *Log) release() {
	if l.chunk != nil {
		*l.chunk = chunk{} // keep no strings alive from the pool
		chunks.Put(l.chunk)
		l.chunk = nil
	}
	l.failures = nil
}

// Len returns how many calls the log has taken: Counts().Total().
func (l *Log) Len() int {
	return l.Counts().Total()
}
