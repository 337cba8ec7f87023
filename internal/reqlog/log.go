package reqlog

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/errown/errown/internal/calls"
)

// Log is the IngressLog of one inbound request.
type Log struct {
	// Procedure is the inbound procedure being served.
	Procedure string
	// Egress holds the request's outbound calls.
	Egress calls.EgressLog
	// root is the key of the root request the request is part of, which
	// its marked calls carry: set, or minted on first use (Root).
	root atomic.Uint64
	// owner is the Map that counts the Log, from Insert on (a call left
	// under way reads its clock after Remove), shard its shard there
	// (_removed after Remove).
	owner *Map
	shard uint32
	// calls counts the outbound calls under way (_callsCount), with
	// _callsEnded once EndCalls was called.
	calls atomic.Int32
	// flags holds the bits _noRetry ... _timed.
	flags atomic.Uint32
	// callTime is, once TimeCalls was called, the time during which at
	// least one outbound call was under way, in microseconds on the
	// owner's clock modulo 2^32: a call that makes calls go from 0 to 1
	// takes away the clock's reading, one that brings it back to 0 adds
	// it. Only the sum is read, so the wrap does no harm under 71 minutes.
	callTime atomic.Uint32
}

// SetRoot sets the key of the root request the request is part of.
func (l *Log) SetRoot(k uint64) { l.root.Store(k) }

// Root returns the key of the root request the request is part of: the
// one set, or else one minted now, once, by the owner's mint
// (Map.MintRoots), so that the steady state mints none; 0 for a Log of a
// Map that mints none.
func (l *Log) Root() uint64 {
	if k := l.root.Load(); k != 0 || l.owner == nil || l.owner.mint == nil {
		return k
	}
	if k := l.owner.mint(); l.root.CompareAndSwap(0, k) {
		return k
	}
	return l.root.Load()
}

// SetNoRetry asks that the error response to this request tell the caller
// not to retry it.
func (l *Log) SetNoRetry() { l.flags.Or(_noRetry) }

// NoRetry reports whether SetNoRetry was called.
func (l *Log) NoRetry() bool { return l.flags.Load()&_noRetry != 0 }

// SetCallerFault says that the request's error, if any, is its caller's
// fault: an answer, whatever its code.
func (l *Log) SetCallerFault() { l.flags.Or(_callerFault) }

// CallerFault reports whether SetCallerFault was called.
func (l *Log) CallerFault() bool { return l.flags.Load()&_callerFault != 0 }

// SetMarked says that the request came with errown's attempt mark: its
// caller runs errown and reads its storm figures (it is in an incident,
// or below one), so the request's calls carry the mark too.
func (l *Log) SetMarked() { l.flags.Or(_marked) }

// Marked reports whether SetMarked was called.
func (l *Log) Marked() bool { return l.flags.Load()&_marked != 0 }

// SetUnmarkedCall says that a call of the request went out without the
// attempt mark (the steady state): its callee reported no figures of a
// successful subtree, which counts as one request.
func (l *Log) SetUnmarkedCall() {
	if l.flags.Load()&_unmarkedCall == 0 {
		l.flags.Or(_unmarkedCall)
	}
}

// UnmarkedCall reports whether SetUnmarkedCall was called.
func (l *Log) UnmarkedCall() bool { return l.flags.Load()&_unmarkedCall != 0 }

// The bits of Log.flags.
const (
	_noRetry uint32 = 1 << iota
	_callerFault
	_marked
	_unmarkedCall
	_timed
)

type logKey struct{}

// NewContext returns a child of ctx carrying l.
func NewContext(ctx context.Context, l *Log) context.Context {
	return context.WithValue(ctx, logKey{}, l)
}

// Node is a context node carrying a Log: a request's Log and the context
// that carries it in one allocation. It answers Value for the Log and
// passes everything else (deadline, cancellation, other values) to its
// parent.
type Node struct {
	context.Context
	Log Log
}

// Value implements context.Context.
func (n *Node) Value(key any) any {
	if _, ok := key.(logKey); ok {
		return &n.Log
	}
	return n.Context.Value(key)
}

// FromContext returns the Log in ctx, or nil when ctx carries none: the
// call is not made on behalf of a tracked request (a context was dropped,
// or the request was served untracked).
func FromContext(ctx context.Context) *Log {
	l, _ := ctx.Value(logKey{}).(*Log)
	return l
}

// _callsEnded is the bit of Log.calls that EndCalls sets: the request
// has ended for admission, and its calls park, resume and time it no
// more. The count of calls under way is below it.
const (
	_callsEnded = math.MinInt32
	_callsCount = math.MaxInt32
)

// CallStarted counts an outbound call of the request under way, until
// CallEnded. When no other call was under way, the request starts waiting
// for its calls: its admission slot is parked (Map.WatchCalls) and, for a
// timed Log, the clock read.
func (l *Log) CallStarted() {
	if l.calls.Add(1) == 1 {
		l.waiting(true)
	}
}

// CallEnded ends what CallStarted began, after the call's storm is added
// and its entry appended; the last one takes the slot back.
func (l *Log) CallEnded() {
	if l.calls.Add(-1) == 0 {
		l.waiting(false)
	}
}

// waiting tells the owner's Parker that the request starts (start) or
// stops waiting for its calls, and adds the clock's reading to a timed
// Log's callTime.
func (l *Log) waiting(start bool) {
	m := l.owner
	if m == nil || m.parker == nil {
		return
	}
	timed := l.flags.Load()&_timed != 0
	if start {
		if timed {
			l.callTime.Add(-m.micros())
		}
		m.parker.Park()
		return
	}
	m.parker.Unpark()
	if timed {
		l.callTime.Add(m.micros())
	}
}

// TimeCalls has the Log measure how long the request's outbound calls
// keep it waiting (CallTime) when its Map watches calls. Call it before
// the request's first outbound call.
func (l *Log) TimeCalls() {
	if l.owner != nil && l.owner.parker != nil {
		l.flags.Or(_timed)
	}
}

// EndCalls ends the request for admission: its calls park, resume and
// time it no more. It reports whether the request was parked (a call left
// under way), for its caller to Unpark before it gives its slot up. Call
// it once, as the request ends, before CallTime.
func (l *Log) EndCalls() (parked bool) {
	old := l.calls.Or(_callsEnded)
	return old&_callsEnded == 0 && old&_callsCount != 0
}

// CallTime returns the time during which at least one of the request's
// outbound calls was under way since TimeCalls (a fan-out counts once; a
// call under way counts until now), 0 for an untimed Log.
func (l *Log) CallTime() time.Duration {
	if l.flags.Load()&_timed == 0 {
		return 0
	}
	v := l.callTime.Load()
	if l.calls.Load()&_callsCount > 0 {
		// Under way: its start was taken, its end is now. (A call that
		// starts as this reads may not have taken it yet: the caller
		// bounds the result by the request's latency.)
		v += l.owner.micros()
	}
	return time.Duration(v) * time.Microsecond
}

// CallsUnderWay reports whether an outbound call of the request is still
// under way.
func (l *Log) CallsUnderWay() bool { return l.calls.Load()&_callsCount != 0 }

// CallsInFlight returns how many outbound calls of the request are still
// under way.
func (l *Log) CallsInFlight() int { return int(l.calls.Load() & _callsCount) }

type untrackedKey struct{}

// WithUntracked returns ctx marked as the context of a request errown
// serves untracked (its ingress log was full): its outbound calls still
// tell their callees that an errown caller is above.
func WithUntracked(ctx context.Context) context.Context {
	return context.WithValue(ctx, untrackedKey{}, true)
}

// Untracked reports whether ctx is that of a request errown serves
// untracked.
func Untracked(ctx context.Context) bool {
	v, _ := ctx.Value(untrackedKey{}).(bool)
	return v
}
