package admission

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fill admits n first attempts that hold their slots.
func fill(t *testing.T, c *Controller, n int) []Ticket {
	t.Helper()
	var ts []Ticket
	for range n {
		tk, reason, ok := c.Admit(context.Background(), PriorityFirst)
		require.True(t, ok, reason)
		ts = append(ts, tk)
	}
	return ts
}

// admitAsync admits a request of priority p on its own goroutine.
type result struct {
	tk     Ticket
	reason string
	ok     bool
}

func admitAsync(ctx context.Context, c *Controller, p Priority) <-chan result {
	ch := make(chan result, 1)
	go func() {
		tk, reason, ok := c.Admit(ctx, p)
		ch <- result{tk, reason, ok}
	}()
	return ch
}

func waitQueued(t *testing.T, c *Controller, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.Queued() == n }, 5*time.Second, time.Millisecond)
}

func TestControllerQueuesThenSheds(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxQueue: 4, MinLimit: 1, MaxLimit: 100, Now: clk.Now})
	held := fill(t, c, _initialLimit)

	// At the limit, a retry queues while half the queue is free...
	r1 := admitAsync(context.Background(), c, PriorityRetry)
	waitQueued(t, c, 1)
	r2 := admitAsync(context.Background(), c, PriorityIncident)
	waitQueued(t, c, 2)
	// ...and is shed past it; a first attempt still queues.
	_, reason, ok := c.Admit(context.Background(), PriorityRetry)
	assert.False(t, ok)
	assert.Equal(t, ReasonRetry, reason)
	_, reason, ok = c.Admit(context.Background(), PriorityIncident)
	assert.False(t, ok)
	assert.Equal(t, ReasonIncident, reason)
	f1 := admitAsync(context.Background(), c, PriorityFirst)
	waitQueued(t, c, 3)
	f2 := admitAsync(context.Background(), c, PriorityFirst)
	waitQueued(t, c, 4)
	// A full queue: a first attempt takes the latest retry's place.
	f3 := admitAsync(context.Background(), c, PriorityFirst)
	r := <-r2
	assert.False(t, r.ok)
	assert.Equal(t, ReasonIncident, r.reason)
	waitQueued(t, c, 4)
	// Then the next low goes, and then first attempts are shed.
	f4 := admitAsync(context.Background(), c, PriorityFirst)
	r = <-r1
	assert.False(t, r.ok)
	assert.Equal(t, ReasonRetry, r.reason)
	waitQueued(t, c, 4)
	_, reason, ok = c.Admit(context.Background(), PriorityFirst)
	assert.False(t, ok)
	assert.Equal(t, ReasonQueueFull, reason)

	// Slots freed go to the queue newest first.
	for i, f := range []<-chan result{f4, f3, f2, f1} {
		c.Done(held[i])
		r := <-f
		assert.True(t, r.ok, "first attempt %d: %s", i, r.reason)
		held = append(held, r.tk)
	}
	assert.Equal(t, 0, c.Queued())
	for _, tk := range held[4:] {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
}

func TestControllerFirstAttemptsServedFirst(t *testing.T) {
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: newClock().Now})
	held := fill(t, c, _initialLimit)
	low := admitAsync(context.Background(), c, PriorityRetry)
	waitQueued(t, c, 1)
	first := admitAsync(context.Background(), c, PriorityFirst)
	waitQueued(t, c, 2)
	c.Done(held[0])
	r := <-first
	require.True(t, r.ok)
	select {
	case <-low:
		t.Fatal("the retry was served before the first attempt")
	case <-time.After(10 * time.Millisecond):
	}
	c.Done(held[1])
	r2 := <-low
	require.True(t, r2.ok)
	for _, tk := range append(held[2:], r.tk, r2.tk) {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
}

func TestControllerAbandoned(t *testing.T) {
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: newClock().Now})
	held := fill(t, c, _initialLimit)
	ctx, cancel := context.WithCancel(context.Background())
	ch := admitAsync(ctx, c, PriorityFirst)
	waitQueued(t, c, 1)
	cancel()
	r := <-ch
	assert.False(t, r.ok)
	assert.Equal(t, ReasonAbandoned, r.reason)
	assert.Equal(t, 0, c.Queued())
	for _, tk := range held {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight(), "the abandoned request holds no slot")
}

// learn answers n requests one after the other, each taking service,
// their callers giving them 1.2 times as much.
func learn(c *Controller, clk *clock, service time.Duration, n int) {
	for range n {
		ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(service*6/5))
		tk, _, _ := c.Admit(ctx, PriorityFirst)
		cancel()
		clk.Add(service)
		c.Done(tk)
	}
}

// TestControllerDeadline: a request whose remaining time is shorter than
// the service time is refused while another is served; with none served
// it is admitted, so that an answer measures the service again (no
// estimate outlives the service it measured: no freshness timer).
func TestControllerDeadline(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now})
	learn(c, clk, 100*time.Millisecond, 3*_sampleEvery)
	require.Equal(t, 100*time.Millisecond, time.Duration(c.service.Load()))

	held := fill(t, c, 1)
	short, cancel := context.WithDeadline(context.Background(), clk.Now().Add(50*time.Millisecond))
	defer cancel()
	_, reason, ok := c.Admit(short, PriorityFirst)
	assert.False(t, ok, "50ms left, 100ms of service, one served")
	assert.Equal(t, ReasonDeadline, reason)
	assert.Equal(t, 1, c.InFlight(), "refused before it took a worker")

	long, cancel := context.WithDeadline(context.Background(), clk.Now().Add(150*time.Millisecond))
	defer cancel()
	tk, reason, ok := c.Admit(long, PriorityFirst)
	require.True(t, ok, reason)
	held = append(held, tk)
	tk, reason, ok = c.Admit(context.Background(), PriorityFirst)
	require.True(t, ok, "no deadline: "+reason)
	held = append(held, tk)
	clk.Add(100 * time.Millisecond)
	for _, tk := range held {
		c.Done(tk)
	}
	require.Equal(t, 0, c.InFlight())

	short, cancel = context.WithDeadline(context.Background(), clk.Now().Add(50*time.Millisecond))
	defer cancel()
	tk, reason, ok = c.Admit(short, PriorityFirst)
	require.True(t, ok, "none served: admitted to measure, "+reason)
	c.Done(tk)
}

func TestControllerObserve(t *testing.T) {
	c := New(Config{Observe: true, MaxQueue: 2, MinLimit: 1, MaxLimit: 100, Now: newClock().Now})
	held := fill(t, c, _initialLimit)
	tk, reason, ok := c.Admit(context.Background(), PriorityRetry)
	assert.True(t, ok)
	assert.Equal(t, "", reason, "a retry would queue")
	held = append(held, tk)
	tk, reason, ok = c.Admit(context.Background(), PriorityRetry)
	assert.True(t, ok)
	assert.Equal(t, ReasonRetry, reason, "past half the queue")
	held = append(held, tk)
	tk, reason, ok = c.Admit(context.Background(), PriorityFirst)
	assert.True(t, ok)
	assert.Equal(t, ReasonQueueFull, reason)
	held = append(held, tk)
	assert.Equal(t, 0, c.Queued())
	for _, tk := range held {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
}

func TestControllerLearnsTheLimit(t *testing.T) {
	clk := newClock()
	var limits []float64
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now, OnLimit: func(l float64, _ int) { limits = append(limits, l) }})
	// Requests four times as slow as the first ones: the service time
	// jumped, and the limit scales down with it.
	learn(c, clk, 10*time.Millisecond, 5*_sampleEvery)
	before := c.Limit()
	learn(c, clk, 40*time.Millisecond, 5*_sampleEvery)
	assert.Less(t, c.Limit(), before)
	assert.NotEmpty(t, limits)
	assert.Equal(t, 40*time.Millisecond, time.Duration(c.service.Load()))
}

func TestControllerConcurrent(t *testing.T) {
	c := New(Config{MaxQueue: 4, MinLimit: 1, MaxLimit: 8})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 200 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(j%5)*time.Millisecond+time.Millisecond)
				if tk, _, ok := c.Admit(ctx, Priority(i%3)); ok {
					time.Sleep(time.Duration(j%3) * 100 * time.Microsecond)
					c.Done(tk)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 0, c.InFlight())
	assert.Equal(t, 0, c.Queued())
}

// TestControllerSamplesUnderPressure: under half the limit one request
// in _sampleEvery is measured; from half the limit on, every one, so
// that the limit follows a service that slowed at once.
func TestControllerSamplesUnderPressure(t *testing.T) {
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: newClock().Now})
	var measured []bool
	held := fill(t, c, _initialLimit)
	for _, tk := range held {
		measured = append(measured, !tk.start.IsZero())
	}
	want := make([]bool, _initialLimit)
	want[0] = true // the first arrival of every _sampleEvery
	for i := _initialLimit/2 - 1; i < _initialLimit; i++ {
		want[i] = true
	}
	assert.Equal(t, want, measured)
	for _, tk := range held {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
}

// TestControllerLateAnswersCutTheLimit: an answer past its caller's
// deadline cuts the limit to the requests served at its admission less
// itself, once per cut: answers admitted before it do not cut again,
// those admitted after do.
func TestControllerLateAnswersCutTheLimit(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now})
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(60*time.Millisecond))
	defer cancel()
	var held []Ticket
	for range _initialLimit {
		tk, reason, ok := c.Admit(ctx, PriorityFirst)
		require.True(t, ok, reason)
		held = append(held, tk)
	}
	clk.Add(100 * time.Millisecond)
	c.Done(held[_initialLimit-1])
	assert.Equal(t, float64(_initialLimit-1), c.Limit(), "late, admitted %d-th", _initialLimit)
	c.Done(held[_initialLimit-2])
	assert.Equal(t, float64(_initialLimit-1), c.Limit(), "admitted before the cut: no second cut")

	late, cancel := context.WithDeadline(context.Background(), clk.Now().Add(60*time.Millisecond))
	defer cancel()
	tk, reason, ok := c.Admit(late, PriorityFirst)
	require.True(t, ok, reason)
	clk.Add(100 * time.Millisecond)
	c.Done(tk)
	assert.Equal(t, float64(_initialLimit-2), c.Limit(), "admitted after the cut, %d-th: cuts again", _initialLimit-1)
	for _, tk := range held[:_initialLimit-2] {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
}

// TestControllerNewestFirst: a freed slot goes to the newest request
// queued (its caller has the most time left); one that can no longer
// finish in its remaining time is shed instead while another is served.
func TestControllerNewestFirst(t *testing.T) {
	// An hour ahead: the contexts' deadlines stay far on the real clock.
	clk := &clock{t: time.Now().Add(time.Hour)}
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 2, Now: clk.Now})
	learn(c, clk, 10*time.Millisecond, 3*_sampleEvery)
	held := fill(t, c, 2)
	var queued []<-chan result
	for i, left := range []time.Duration{100, 100, 25, 100, 100} {
		ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(left*time.Millisecond))
		defer cancel()
		queued = append(queued, admitAsync(ctx, c, PriorityFirst))
		waitQueued(t, c, i+1)
	}
	granted := func(i int) {
		t.Helper()
		r := <-queued[i]
		require.True(t, r.ok, "%d: %s", i, r.reason)
		held = append(held, r.tk)
		for j, ch := range queued[:i] {
			select {
			case r := <-ch:
				t.Fatalf("%d answered before %d: %+v", j, i, r)
			default:
			}
		}
	}
	clk.Add(10 * time.Millisecond)
	c.Done(held[0])
	granted(4) // the newest
	c.Done(held[1])
	granted(3)
	clk.Add(10 * time.Millisecond) // the third has 5ms left, less than the 10ms of service
	c.Done(held[2])
	r := <-queued[2]
	assert.False(t, r.ok, "it cannot finish in time")
	assert.Equal(t, ReasonDeadline, r.reason)
	granted(1) // the slot goes to the next newest
	c.Done(held[3])
	granted(0)
	for _, tk := range held[4:] {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
	assert.Equal(t, 0, c.Queued())
}

func TestOwn(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		give          string
		remaining     time.Duration // the caller's; 0: no deadline
		lat, callees  time.Duration
		wantRemaining time.Duration
		wantLat       time.Duration
	}{
		{give: "no calls", remaining: 60 * ms, lat: 50 * ms, wantRemaining: 60 * ms, wantLat: 50 * ms},
		{give: "its callees' time is not its own", remaining: 60 * ms, lat: 50 * ms, callees: 20 * ms, wantRemaining: 40 * ms, wantLat: 30 * ms},
		{give: "late on its own time", remaining: 60 * ms, lat: 70 * ms, callees: 20 * ms, wantRemaining: 40 * ms, wantLat: 50 * ms},
		{give: "mostly its callees' time: they decide", remaining: 60 * ms, lat: 50 * ms, callees: 45 * ms, wantRemaining: 0, wantLat: 5 * ms},
		{give: "mostly its callees' time, late", remaining: 60 * ms, lat: 61 * ms, callees: 59 * ms, wantRemaining: 0, wantLat: 2 * ms},
		{give: "its callees took all its time", remaining: 60 * ms, lat: 140 * ms, callees: 65 * ms, wantRemaining: 0, wantLat: 75 * ms},
		{give: "no deadline", lat: 50 * ms, callees: 45 * ms, wantLat: 5 * ms},
		{give: "callees bounded by the latency", remaining: 60 * ms, lat: 50 * ms, callees: 80 * ms, wantRemaining: 0, wantLat: 0},
		{give: "negative callees", remaining: 60 * ms, lat: 50 * ms, callees: -ms, wantRemaining: 60 * ms, wantLat: 50 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			tk, lat := own(Ticket{start: time.Unix(1, 0), remaining: tt.remaining, inflight: 3}, tt.lat, tt.callees)
			assert.Equal(t, tt.wantRemaining, tk.remaining, "remaining")
			assert.Equal(t, tt.wantLat, lat, "latency")
			assert.Equal(t, uint32(3), tk.inflight, "the rest of the ticket")
		})
	}
}

// answerAtOnce admits n requests at once, their callers giving them
// deadline, and answers them after lat, callees of which each waited for
// its outbound calls; rounds times over.
func answerAtOnce(t *testing.T, c *Controller, clk *clock, rounds, n int, deadline, lat, callees time.Duration) {
	t.Helper()
	for range rounds {
		ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(deadline))
		var held []Ticket
		for range n {
			if tk, _, ok := c.Admit(ctx, PriorityFirst); ok {
				held = append(held, tk)
			}
		}
		clk.Add(lat)
		for _, tk := range held {
			c.DoneOwn(tk, callees)
		}
		cancel()
	}
}

// TestControllerOwnTime: only the bottleneck cuts. A service whose
// answers slow because its callee's do (its own time unchanged) keeps
// its limit and admits requests with little time left; the callee,
// slow on its own time, cuts its limit and refuses them.
func TestControllerOwnTime(t *testing.T) {
	ms := time.Millisecond
	clk := newClock()
	cfg := Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now}
	above, bottleneck := New(cfg), New(cfg)
	// Steady: 5ms answers, 4.5ms of them the bottleneck's, 60ms deadlines.
	answerAtOnce(t, above, clk, 20, 4, 60*ms, 5*ms, 4500*time.Microsecond)
	answerAtOnce(t, bottleneck, clk, 20, 4, 60*ms, 4500*time.Microsecond, 0)
	aboveLimit, bottleneckLimit := above.Limit(), bottleneck.Limit()

	// The bottleneck slows tenfold, and some answers are late.
	answerAtOnce(t, above, clk, 20, 4, 60*ms, 50*ms, 49500*time.Microsecond)
	answerAtOnce(t, above, clk, 5, 4, 60*ms, 70*ms, 69500*time.Microsecond)
	// Its callee answers at the deadline, its own work four times as
	// slow as usual: late, but by its callee's time.
	answerAtOnce(t, above, clk, 5, 4, 60*ms, 61*ms, 59*ms)
	answerAtOnce(t, bottleneck, clk, 20, 4, 60*ms, 49500*time.Microsecond, 0)
	answerAtOnce(t, bottleneck, clk, 5, 4, 60*ms, 69500*time.Microsecond, 0)

	assert.GreaterOrEqual(t, above.Limit(), aboveLimit, "above the bottleneck: no cut")
	assert.Less(t, bottleneck.Limit(), bottleneckLimit/2, "the bottleneck cuts")
	assert.Less(t, time.Duration(above.service.Load()), 2*time.Millisecond, "above: its own service time")

	// With one request served, one with 10ms left: the service above
	// admits it (its own work takes 0.5ms; its callee judges its own),
	// the bottleneck refuses it.
	short, cancel := context.WithDeadline(context.Background(), clk.Now().Add(10*ms))
	defer cancel()
	for _, tt := range []struct {
		c    *Controller
		want bool
	}{{above, true}, {bottleneck, false}} {
		held := fill(t, tt.c, 1)
		tk, reason, ok := tt.c.Admit(short, PriorityFirst)
		assert.Equal(t, tt.want, ok, reason)
		if ok {
			held = append(held, tk)
		}
		for _, tk := range held {
			tt.c.Done(tk)
		}
	}

	// Judged on the whole latency (Done), the service above cuts too.
	whole := New(cfg)
	answerAtOnce(t, whole, clk, 20, 4, 60*ms, 5*ms, 0)
	wholeLimit := whole.Limit()
	answerAtOnce(t, whole, clk, 20, 4, 60*ms, 50*ms, 0)
	answerAtOnce(t, whole, clk, 5, 4, 60*ms, 70*ms, 0)
	assert.Less(t, whole.Limit(), wholeLimit/2, "the whole latency: every service above cuts")
}

// TestControllerPark: a request waiting for its outbound calls gives its
// slot to the queue, and takes it back over the limit; the answers
// counted meanwhile are answers only.
func TestControllerPark(t *testing.T) {
	c := New(Config{MaxQueue: 4, MinLimit: 1, MaxLimit: 1, Now: newClock().Now})
	held := fill(t, c, 1)
	before := finished(c.state.Load())
	queued := admitAsync(context.Background(), c, PriorityFirst)
	waitQueued(t, c, 1)
	c.Park()
	r := <-queued
	require.True(t, r.ok, "the parked slot went to the queue: %s", r.reason)
	assert.Equal(t, 1, c.InFlight())
	c.Unpark()
	assert.Equal(t, 2, c.InFlight(), "taken back over the limit")
	assert.Equal(t, before, finished(c.state.Load()), "nothing answered")
	c.Done(r.tk)
	c.Done(held[0])
	assert.Equal(t, 0, c.InFlight())
	assert.Equal(t, before+2, finished(c.state.Load()))
}

// TestControllerHoldsWithoutAnswers: with requests served and no answer
// for longer than _jump times the service time (a trigger's onset, before
// its first slow answer), the requests that come queue, as the service
// time jump's rule would have it with that time for the latency; the
// next measured answer ends the hold, which cut nothing.
func TestControllerHoldsWithoutAnswers(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxQueue: 8, MinLimit: 2, MaxLimit: 100, Now: clk.Now})
	learn(c, clk, 5*time.Millisecond, 3*_sampleEvery)
	require.Equal(t, 5*time.Millisecond, time.Duration(c.service.Load()))
	limit := c.Limit()
	require.GreaterOrEqual(t, limit, 8.0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var served []Ticket
	admit := func(msg string) {
		t.Helper()
		tk, reason, ok := c.Admit(ctx, PriorityFirst)
		require.True(t, ok, "%s: %s", msg, reason)
		served = append(served, tk)
	}
	admit("none served")
	admit("one served: marks the time")
	clk.Add(10 * time.Millisecond)
	admit("10ms without an answer, 5ms of service: within the jump")
	clk.Add(30 * time.Millisecond) // 40ms: held to ⌊limit·5/40⌋, at least 2
	queued := admitAsync(ctx, c, PriorityFirst)
	waitQueued(t, c, 1)
	assert.Equal(t, 3, c.InFlight())
	assert.Equal(t, limit, c.Limit(), "a hold, not a cut")

	require.False(t, served[1].Measured())
	c.Done(served[1])
	assert.Never(t, func() bool { return c.Queued() == 0 }, 50*time.Millisecond, time.Millisecond, "an answer not measured ends no hold")
	require.True(t, served[0].Measured())
	c.Done(served[0])
	r := <-queued
	require.True(t, r.ok, "a measured answer ends the hold: %s", r.reason)
	served = append(served[2:], r.tk)
	admit("answered since the mark")
	for _, tk := range served {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
}

// TestControllerParkIsNoPause: requests waiting for their callees
// (parked) with no answer for long hold nothing: the pause is not the
// service's.
func TestControllerParkIsNoPause(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now})
	learn(c, clk, 5*time.Millisecond, 3*_sampleEvery)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var served []Ticket
	admit := func(msg string) {
		t.Helper()
		select {
		case r := <-admitAsync(ctx, c, PriorityFirst):
			require.True(t, r.ok, "%s: %s", msg, r.reason)
			served = append(served, r.tk)
		case <-time.After(time.Second):
			require.FailNow(t, "held", msg)
		}
	}
	admit("none served")
	admit("one served: marks the time")
	c.Park()
	c.Park()
	clk.Add(40 * time.Millisecond)
	admit("none served")
	admit("served since the park, no answer since: marks the time again")
	c.Unpark()
	c.Unpark()
	for _, tk := range served {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
}
