package egresslog

import "sync"

// _inline is how many entries a Log holds without allocating: most requests
// make only a few outbound calls.
const _inline = 4

// Log is the egress log of one inbound request. It is safe for concurrent
// use by the goroutines a handler fans out to. Once closed it takes no more
// entries.
type Log struct {
	mu      sync.Mutex
	closed  bool
	n       int
	inline  [_inline]Entry
	entries []Entry // used past _inline
}

// Append adds e to the log. It returns false, and drops e, when the log is
// already closed: the inbound request the call was made for has finished.
func (l *Log) Append(e Entry) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if l.n < _inline {
		l.inline[l.n] = e
	} else {
		l.entries = append(l.entries, e)
	}
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
	if l.n <= _inline {
		return append(dst, l.inline[:l.n]...)
	}
	dst = append(dst, l.inline[:]...)
	return append(dst, l.entries...)
}

// Len returns how many entries the log holds.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Reset empties l for reuse. The caller must own l exclusively.
func (l *Log) Reset() {
	l.closed = false
	for i := range l.inline {
		l.inline[i] = Entry{}
	}
	l.n = 0
	l.entries = l.entries[:0]
}
