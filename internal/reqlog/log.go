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
	// root is the request's root key, carried by its marked calls: set,
	// or minted on first use (Root).
	root atomic.Uint64
	// owner is the Map counting the Log from Insert on (a call left under
	// way reads its clock after Remove); shard is its shard there
	// (_removed after Remove).
	owner *Map
	shard uint32
	// calls counts the calls under way (_callsCount), with _callsEnded
	// once EndCalls was called.
	calls atomic.Int32
	// flags holds the bits _noRetry ... _timed.
	flags atomic.Uint32
	// callTime, once TimeCalls was called, is the time at least one call
	// was under way, in microseconds on the owner's clock modulo 2^32:
	// calls going 0→1 subtract the reading, 1→0 add it. Only the sum is
	// read, so the wrap is harmless under 71 minutes.
	callTime atomic.Uint32
}

// SetRoot sets the request's root key.
func (l *Log) SetRoot(k uint64) { l.root.Store(k) }

// Root returns the request's root key: the one set, else one minted once
// now by the owner (Map.MintRoots), so the steady state mints none; 0 if
// the Map mints none.
func (l *Log) Root() uint64 {
	if k := l.root.Load(); k != 0 || l.owner == nil || l.owner.mint == nil {
		return k
	}
	if k := l.owner.mint(); l.root.CompareAndSwap(0, k) {
		return k
	}
	return l.root.Load()
}

// SetNoRetry asks that the error response tell the caller not to retry.
func (l *Log) SetNoRetry() { l.flags.Or(_noRetry) }

// NoRetry reports whether SetNoRetry was called.
func (l *Log) NoRetry() bool { return l.flags.Load()&_noRetry != 0 }

// SetCallerFault marks the request's error, if any, as its caller's
// fault: an answer, whatever its code.
func (l *Log) SetCallerFault() { l.flags.Or(_callerFault) }

// CallerFault reports whether SetCallerFault was called.
func (l *Log) CallerFault() bool { return l.flags.Load()&_callerFault != 0 }

// SetMarked says the request came with errown's attempt mark (its caller
// reads its storm figures: in or below an incident), so its calls carry
// the mark too.
func (l *Log) SetMarked() { l.flags.Or(_marked) }

// Marked reports whether SetMarked was called.
func (l *Log) Marked() bool { return l.flags.Load()&_marked != 0 }

// SetUnmarkedCall says a call went out unmarked (the steady state): its
// callee reported no figures, counting as one request.
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

// Node is a context node carrying a Log, both in one allocation; other
// Values, deadline and cancellation come from its parent.
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

// FromContext returns the Log in ctx, or nil when the call is not made for
// a tracked request (context dropped, or served untracked).
func FromContext(ctx context.Context) *Log {
	l, _ := ctx.Value(logKey{}).(*Log)
	return l
}

// _callsEnded is Log.calls' bit set by EndCalls: the request ended for
// admission, and its calls no longer park, resume or time it. The count
// of calls under way is below it.
const (
	_callsEnded = math.MinInt32
	_callsCount = math.MaxInt32
)

// CallStarted counts a call under way until CallEnded. The first one
// under way parks the request's admission slot (Map.WatchCalls) and, for
// a timed Log, reads the clock.
func (l *Log) CallStarted() {
	if l.calls.Add(1) == 1 {
		l.waiting(true)
	}
}

// CallEnded ends CallStarted, after the call's storm and entry were
// added; the last one takes the slot back.
func (l *Log) CallEnded() {
	if l.calls.Add(-1) == 0 {
		l.waiting(false)
	}
}

// waiting tells the owner's Parker the request starts or stops waiting
// for its calls, and updates a timed Log's callTime.
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

// TimeCalls makes the Log measure its calls' waiting time (CallTime) if
// its Map watches calls. Call it before the first outbound call.
func (l *Log) TimeCalls() {
	if l.owner != nil && l.owner.parker != nil {
		l.flags.Or(_timed)
	}
}

// EndCalls ends the request for admission and reports whether it was
// parked (a call left under way), for the caller to Unpark before giving
// up its slot. Call it once, as the request ends, before CallTime.
func (l *Log) EndCalls() (parked bool) {
	old := l.calls.Or(_callsEnded)
	return old&_callsEnded == 0 && old&_callsCount != 0
}

// CallTime returns the time at least one call was under way since
// TimeCalls (a fan-out counts once; an open call counts until now); 0
// when untimed.
func (l *Log) CallTime() time.Duration {
	if l.flags.Load()&_timed == 0 {
		return 0
	}
	v := l.callTime.Load()
	if l.calls.Load()&_callsCount > 0 {
		// Under way: its end is now. A call starting concurrently may be
		// missed; the caller bounds the result by the request's latency.
		v += l.owner.micros()
	}
	return time.Duration(v) * time.Microsecond
}

// CallsUnderWay reports whether an outbound call is still under way.
func (l *Log) CallsUnderWay() bool { return l.calls.Load()&_callsCount != 0 }

// CallsInFlight returns how many outbound calls are still under way.
func (l *Log) CallsInFlight() int { return int(l.calls.Load() & _callsCount) }

type untrackedKey struct{}

// WithUntracked marks ctx as an untracked request's (its ingress log was
// full); its calls still tell callees an errown caller is above.
func WithUntracked(ctx context.Context) context.Context {
	return context.WithValue(ctx, untrackedKey{}, true)
}

// Untracked reports whether ctx is an untracked request's.
func Untracked(ctx context.Context) bool {
	v, _ := ctx.Value(untrackedKey{}).(bool)
	return v
}
