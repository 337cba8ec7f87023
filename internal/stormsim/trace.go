package stormsim

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errown/errown/internal/defaults"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// TraceEvent is one attempt of one call made for the traced root request
// (Options.Trace), as the caller's innermost outbound middleware saw it:
// after the retry middleware, before the transport.
type TraceEvent struct {
	// Edge is the hop, e.g. "C→D".
	Edge string `json:"edge"`
	// Attempt is the attempt number: 1, or 2 and later for a retry.
	Attempt int `json:"attempt"`
	// StartMS and EndMS are when the attempt was sent and when it ended,
	// in milliseconds since the traced root request's first attempt was
	// sent.
	StartMS float64 `json:"startMs"`
	EndMS   float64 `json:"endMs"`
	// DeadlineMS is when the attempt's context was to expire, on the same
	// clock: its per-attempt timeout or its request's deadline, whichever
	// came first; 0 when it had none. The deadline is set before the
	// attempt reaches the innermost middleware, so an attempt timed out
	// ends at DeadlineMS or after it, and on a loaded machine may last
	// less than its timeout from StartMS.
	DeadlineMS float64 `json:"deadlineMs,omitempty"`
	// Code is the attempt's outcome: "ok", or the code of its error
	// (deadline-exceeded for an attempt timed out by its caller).
	Code string `json:"code"`
	// Claim is the claim header of the error response, "" when none
	// arrived (missing).
	Claim string `json:"claim,omitempty"`
}

// String formats e as "C→D#2 41-60ms deadline-exceeded unclaimed".
func (e TraceEvent) String() string {
	s := fmt.Sprintf("%s#%d %.0f-%.0fms %s", e.Edge, e.Attempt, e.StartMS, e.EndMS, e.Code)
	if e.Claim != "" {
		s += " " + e.Claim
	}
	return s
}

// TraceText formats a trace, one event after the other, in the order the
// attempts were sent.
func TraceText(events []TraceEvent) string {
	parts := make([]string, len(events))
	for i, e := range events {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

// tracer records the attempts of one root request. It is safe for
// concurrent use.
type tracer struct {
	root   atomic.Int64 // the root request traced; -1 for none
	mu     sync.Mutex
	events []traceEvent
}

type traceEvent struct {
	edge       int
	attempt    int
	start, end time.Time
	deadline   time.Time // zero: none
	code       yarpcerrors.Code
	ok         bool
	claim      string
}

func newTracer() *tracer {
	t := &tracer{}
	t.root.Store(-1)
	return t
}

// traces reports whether root is the root request traced.
func (t *tracer) traces(root int64) bool {
	return root >= 0 && root == t.root.Load()
}

// start traces root request root from now on, forgetting any earlier
// trace; -1 traces nothing.
func (t *tracer) start(root int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.root.Store(root)
	t.events = nil
}

// record notes one attempt on edge e.
func (t *tracer) record(e, attempt int, start, deadline time.Time, res *transport.Response, err error) {
	ev := traceEvent{edge: e, attempt: attempt, start: start, end: time.Now(), deadline: deadline, ok: err == nil}
	if err != nil {
		ev.code = yarpcerrors.FromError(err).Code()
		if res != nil {
			ev.claim, _ = res.Headers.Get(defaults.ClaimHeader)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, ev)
}

// trace returns the events recorded, in the order they were sent, with
// g's edge names.
func (t *tracer) trace(g *graph) []TraceEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.events) == 0 {
		return nil
	}
	events := append([]traceEvent(nil), t.events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].start.Before(events[j].start) })
	origin := events[0].start
	ms := func(at time.Time) float64 { return float64(at.Sub(origin).Microseconds()) / 1000 }
	out := make([]TraceEvent, len(events))
	for i, e := range events {
		code := "ok"
		if !e.ok {
			code = e.code.String()
		}
		out[i] = TraceEvent{Edge: g.edgeName(e.edge), Attempt: e.attempt, StartMS: ms(e.start), EndMS: ms(e.end), Code: code, Claim: e.claim}
		if !e.deadline.IsZero() {
			out[i].DeadlineMS = ms(e.deadline)
		}
	}
	return out
}
