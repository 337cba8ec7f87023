package egresslog

import "sync"

// _inline is how many entries a Log holds without allocating: most requests
// make only a few outbound calls.
const _inline = 4

// chunk is where a Log keeps its first _inline entries. Chunks are pooled
// (chunks) rather than part of the Log so that a Log stays small: the
// chunk is taken on the first Append and given back on Close, both under
// the Log's lock, and a closed Log never touches it again, so no late
// Append can land in a chunk another Log is using.
type chunk [_inline]Entry

var chunks = sync.Pool{New: func() any { return new(chunk) }}

// Log is the egress log of one inbound request. It is safe for concurrent
// use by the goroutines a handler fans out to. Once closed it takes no more
// entries.
type Log struct {
	mu      sync.Mutex
	closed  bool
	n       int
	entries []Entry // in chunk while they fit, then on the heap
	chunk   *chunk  // from chunks, or nil
}

// Append adds e to the log. It returns false, and drops e, when the log is
// already closed: the inbound request the call was made for has finished.
func (l *Log) Append(e Entry) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if l.entries == nil {
		l.chunk = chunks.Get().(*chunk)
		l.entries = l.chunk[:0]
	}
	l.entries = append(l.entries, e)
	l.n++
	return true
}

// Close stops the log from taking entries and appends the entries it
// holds to dst, in the order they were added. Close is idempotent; calls
// after the first append nothing.
func (l *Log) Close(dst []Entry) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return dst
	}
	l.closed = true
	dst = append(dst, l.entries...)
	l.release()
	return dst
}

// release gives the chunk back and forgets the entries. l.mu must be held
// or l owned exclusively.
func (l *Log) release() {
	if l.chunk != nil {
		*l.chunk = chunk{} // keep no strings alive from the pool
		chunks.Put(l.chunk)
		l.chunk = nil
	}
	l.entries = nil
}

// Len returns how many entries the log holds.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}
