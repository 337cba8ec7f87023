package chaos

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/yarpc/yarpcerrors"
)

// Action is what the middleware does with one call.
type Action uint8

// The actions, each as teams write it.
const (
	// Pass sends the call on, once.
	Pass Action = iota
	// Hedge sends the call, and again after a delay unless the first
	// attempt answered; it returns the first answer and leaves the other
	// attempt running, its answer discarded.
	Hedge
	// Abandon sends the call and returns a deadline-exceeded error at a
	// timer while the attempt runs on, as timeout middleware does that
	// runs next.Call in a goroutine.
	Abandon
	// Fallback sends the call, and after a failure sends it to another
	// procedure (Alt) through the same next.
	Fallback
	// Replay sends the call, and after a failure sends it again, its body
	// reset.
	Replay
	// Panic panics on the caller's goroutine: before sending, after the
	// attempt returned, or with an attempt running (Choice.Stage). yarpc
	// recovers it further out.
	Panic
	_actions
)

// Actions are all the actions, for Config.Actions.
var Actions = []Action{Pass, Hedge, Abandon, Fallback, Replay, Panic}

var _actionNames = [...]string{"pass", "hedge", "abandon", "fallback", "replay", "panic"}

// String names the action.
func (a Action) String() string {
	if int(a) < len(_actionNames) {
		return _actionNames[a]
	}
	return fmt.Sprintf("action(%d)", a)
}

// Panic stages: when a Panic call panics.
const (
	PanicBefore  = iota // before sending anything
	PanicAfter          // after the attempt returned
	PanicRunning        // with an attempt sent and still running
	_panicStages
)

// Choice is what the middleware does with one call.
type Choice struct {
	Action Action
	// Delay is a hedge's delay before its second attempt, an abandon's
	// timer.
	Delay time.Duration
	// Stage is a panic's (PanicBefore, PanicAfter, PanicRunning).
	Stage int
}

func (c Choice) String() string {
	switch c.Action {
	case Hedge, Abandon:
		return fmt.Sprintf("%v after %v", c.Action, c.Delay)
	case Panic:
		return fmt.Sprintf("panic at stage %d", c.Stage)
	}
	return c.Action.String()
}

// PanicValue is what a Panic call panics with.
const PanicValue = "chaos: the application's outbound middleware panicked"

// Config configures a Middleware.
type Config struct {
	// Source draws each call's choice. Required.
	Source Source
	// Actions are the actions drawn from, evenly. Default all of them.
	Actions []Action
	// MaxDelay bounds a hedge's delay and an abandon's timer. Default
	// 2ms.
	MaxDelay time.Duration
	// Ledger, when set, checks every answer an attempt gets back, as
	// next returns it.
	Ledger *Ledger
}

// Middleware is the chaos middleware. Its adapters (Call, Interceptor,
// RoundTripper) share its choices and counts. Wait waits for the
// attempts it left running.
type Middleware struct {
	src      Source
	actions  []Action
	maxDelay time.Duration
	ledger   *Ledger

	pending pending
	calls   [_actions]atomic.Int64
	sends   atomic.Int64
	late    atomic.Int64
	running atomic.Int64
}

// New returns the middleware cfg describes.
func New(cfg Config) (*Middleware, error) {
	if cfg.Source == nil {
		return nil, fmt.Errorf("chaos: a Source is required")
	}
	for _, a := range cfg.Actions {
		if a >= _actions {
			return nil, fmt.Errorf("chaos: unknown action %d in Actions (want 0 to %d)", a, _actions-1)
		}
	}
	m := &Middleware{src: cfg.Source, actions: cfg.Actions, maxDelay: cfg.MaxDelay, ledger: cfg.Ledger}
	m.pending.zero.L = &m.pending.mu
	if len(m.actions) == 0 {
		m.actions = Actions
	}
	if m.maxDelay <= 0 {
		m.maxDelay = 2 * time.Millisecond
	}
	return m, nil
}

// Choose draws the next call's choice.
func (m *Middleware) Choose() Choice {
	c := Choice{Action: m.actions[m.src.Next()%uint64(len(m.actions))]}
	switch c.Action {
	case Hedge, Abandon:
		c.Delay = scaled(m.src, m.maxDelay)
	case Panic:
		c.Stage = int(m.src.Next() % _panicStages)
	}
	return c
}

// Stats are what a Middleware did.
type Stats struct {
	// Calls by action.
	Calls map[Action]int64
	// Sends are the attempts it sent through next.
	Sends int64
	// Late are the attempts that ended after their call had returned.
	Late int64
}

// Stats returns what m did so far.
func (m *Middleware) Stats() Stats {
	s := Stats{Calls: make(map[Action]int64, _actions), Sends: m.sends.Load(), Late: m.late.Load()}
	for a := range _actions {
		if n := m.calls[a].Load(); n > 0 {
			s.Calls[a] = n
		}
	}
	return s
}

// Wait waits until no attempt m left running runs.
func (m *Middleware) Wait() { m.pending.wait() }

// Running returns how many attempts m left running still run.
func (m *Middleware) Running() int64 { return m.running.Load() }

// result is one attempt's answer.
type result[R any] struct {
	r   R
	err error
}

// call is one call Do runs: what it sends, and whether it returned.
type call[R any] struct {
	m        *Middleware
	send     func(ctx context.Context, alt bool) (R, error)
	discard  func(R)
	returned atomic.Bool
}

// Do runs one call as the drawn choice says, each attempt sent with send
// (alt: to the other procedure), an answer not handed on given to discard
// (which closes its body). Every adapter runs its calls through it.
func Do[R any](ctx context.Context, m *Middleware, send func(ctx context.Context, alt bool) (R, error), discard func(R)) (R, error) {
	return DoChoice(ctx, m, m.Choose(), send, discard)
}

// DoChoice is Do with the choice given.
func DoChoice[R any](ctx context.Context, m *Middleware, ch Choice, send func(ctx context.Context, alt bool) (R, error), discard func(R)) (R, error) {
	m.calls[ch.Action].Add(1)
	c := &call[R]{m: m, send: send, discard: discard}
	defer c.returned.Store(true)
	switch ch.Action {
	case Hedge:
		return c.hedge(ctx, ch.Delay)
	case Abandon:
		return c.abandon(ctx, ch.Delay)
	case Fallback:
		r, err := c.sendOnce(ctx, false)
		if err == nil {
			return r, nil
		}
		discard(r)
		return c.sendOnce(ctx, true)
	case Replay:
		r, err := c.sendOnce(ctx, false)
		if err == nil {
			return r, nil
		}
		discard(r)
		return c.sendOnce(ctx, false)
	case Panic:
		switch ch.Stage {
		case PanicAfter:
			r, _ := c.sendOnce(ctx, false)
			discard(r)
		case PanicRunning:
			done := c.background(ctx)
			drain(c.m, done, discard)
		}
		panic(PanicValue)
	default:
		return c.sendOnce(ctx, false)
	}
}

func (c *call[R]) sendOnce(ctx context.Context, alt bool) (R, error) {
	c.m.sends.Add(1)
	return c.send(ctx, alt)
}

// background sends an attempt on a goroutine of its own; its answer
// comes on the channel returned (buffered: the goroutine never blocks).
func (c *call[R]) background(ctx context.Context) <-chan result[R] {
	done := make(chan result[R], 1)
	c.m.pending.add()
	c.m.running.Add(1)
	go func() {
		defer c.m.pending.done()
		defer c.m.running.Add(-1)
		r, err := c.sendOnce(ctx, false)
		if c.returned.Load() {
			c.m.late.Add(1)
		}
		done <- result[R]{r, err}
	}()
	return done
}

// drain discards, on a goroutine of its own, the answer to come on done.
func drain[R any](m *Middleware, done <-chan result[R], discard func(R)) {
	m.pending.add()
	go func() {
		defer m.pending.done()
		discard((<-done).r)
	}()
}

func (c *call[R]) hedge(ctx context.Context, delay time.Duration) (R, error) {
	first := c.background(ctx)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case res := <-first:
		return res.r, res.err
	case <-t.C:
	}
	second := c.background(ctx)
	select {
	case res := <-first:
		drain(c.m, second, c.discard)
		return res.r, res.err
	case res := <-second:
		drain(c.m, first, c.discard)
		return res.r, res.err
	}
}

func (c *call[R]) abandon(ctx context.Context, after time.Duration) (R, error) {
	done := c.background(ctx)
	t := time.NewTimer(after)
	defer t.Stop()
	select {
	case res := <-done:
		return res.r, res.err
	case <-t.C:
		drain(c.m, done, c.discard)
		var zero R
		return zero, yarpcerrors.DeadlineExceededErrorf("chaos: abandoned the call after %v, its attempt running on", after)
	}
}

// pending counts the goroutines a Middleware started that still run. Not
// a WaitGroup: a call may come while Wait waits (a request its caller
// gave up on, still on its way) and start one, and a WaitGroup's first
// Add must happen before its Wait.
type pending struct {
	mu   sync.Mutex
	zero sync.Cond // on mu: n dropped to 0
	n    int
}

func (p *pending) add() {
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
}

func (p *pending) done() {
	p.mu.Lock()
	if p.n--; p.n == 0 {
		p.zero.Broadcast()
	}
	p.mu.Unlock()
}

// wait waits until none runs.
func (p *pending) wait() {
	p.mu.Lock()
	for p.n > 0 {
		p.zero.Wait()
	}
	p.mu.Unlock()
}
