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

	// Slots freed go to the queue in order.
	for i, f := range []<-chan result{f1, f2, f3, f4} {
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

// learn closes windows of requests that took service each.
func learn(c *Controller, clk *clock, service time.Duration, windows int) {
	for range windows {
		for range _minSamples * _sampleEvery {
			tk, _, _ := c.Admit(context.Background(), PriorityFirst)
			clk.Add(service)
			c.Done(tk)
		}
		clk.Add(_window)
	}
}

func TestControllerDeadline(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now})
	learn(c, clk, 100*time.Millisecond, 3)
	// As if the latest window had just closed: with one request in
	// _sampleEvery sampled, 100ms requests close a window a second.
	c.measuredAt.Store(int64(clk.Now().Sub(c.epoch)))

	short, cancel := context.WithDeadline(context.Background(), clk.Now().Add(50*time.Millisecond))
	defer cancel()
	_, reason, ok := c.Admit(short, PriorityFirst)
	assert.False(t, ok, "50ms left, 100ms of service")
	assert.Equal(t, ReasonDeadline, reason)
	assert.Equal(t, 0, c.InFlight(), "refused before it took a worker")

	long, cancel := context.WithDeadline(context.Background(), clk.Now().Add(150*time.Millisecond))
	defer cancel()
	tk, reason, ok := c.Admit(long, PriorityFirst)
	require.True(t, ok, reason)
	c.Done(tk)
	tk, reason, ok = c.Admit(context.Background(), PriorityFirst)
	require.True(t, ok, "no deadline: "+reason)
	c.Done(tk)
	require.Equal(t, 0, c.InFlight())
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
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now, OnWindow: func(l float64, _ int) { limits = append(limits, l) }})
	// Requests twice as slow as the first windows' shrink the limit.
	learn(c, clk, 10*time.Millisecond, 5)
	before := c.Limit()
	learn(c, clk, 40*time.Millisecond, 5)
	assert.Less(t, c.Limit(), before)
	assert.NotEmpty(t, limits)
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

func TestControllerStaleServiceRefusesNothing(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now})
	learn(c, clk, 100*time.Millisecond, 3)
	// Refused requests are not measured: an estimate from a slow spell
	// expires, or it would refuse every request after the spell.
	clk.Add(_fresh + time.Millisecond)
	short, cancel := context.WithDeadline(context.Background(), clk.Now().Add(50*time.Millisecond))
	defer cancel()
	tk, reason, ok := c.Admit(short, PriorityFirst)
	require.True(t, ok, reason)
	c.Done(tk)
}

// TestControllerSamplesUnderPressure: with half the limit in use every
// request's latency is sampled, so that a window closes after
// _minSamples answers, not _minSamples × _sampleEvery (one in eight
// sampled, a slowed service moved the limit once a second).
func TestControllerSamplesUnderPressure(t *testing.T) {
	clk := newClock()
	windows := 0
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now, OnWindow: func(float64, int) { windows++ }})
	held := fill(t, c, _initialLimit-1)
	clk.Add(2 * _window)
	for _, tk := range held {
		c.Done(tk)
	}
	assert.Equal(t, 1, windows, "a window closed on %d answers", len(held))
	assert.Equal(t, 0, c.InFlight())

	// Under half the limit, one in _sampleEvery is sampled: too few.
	clk.Add(2 * _window)
	for range _minSamples {
		tk := fill(t, c, 1)[0]
		c.Done(tk)
	}
	assert.Equal(t, 1, windows, "no window on %d answers at low load", _minSamples)
}

// TestControllerLateAnswersCutTheLimit: answers past their callers'
// deadline close the window early, however few, and cut the limit at
// once (the smoothed gradient grew it on the first window).
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
	for _, tk := range held[_initialLimit-_minSamples/2:] {
		c.Done(tk)
	}
	assert.LessOrEqual(t, c.Limit(), float64(_initialLimit)*0.6, "the limit after %d late answers", _minSamples/2)
	for _, tk := range held[:_initialLimit-_minSamples/2] {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
}

// TestControllerLIFOWhenTheQueueIsLong: once the queue holds more than
// the limit, a freed slot goes to the latest request queued (its caller
// has the most time left); a short queue is served in order.
func TestControllerLIFOWhenTheQueueIsLong(t *testing.T) {
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 2, Now: newClock().Now})
	held := fill(t, c, 2)
	var queued []<-chan result
	for i := range 4 {
		queued = append(queued, admitAsync(context.Background(), c, PriorityFirst))
		waitQueued(t, c, i+1)
	}
	granted := func() int {
		t.Helper()
		for {
			for i, ch := range queued {
				if ch == nil {
					continue
				}
				select {
				case r := <-ch:
					require.True(t, r.ok, r.reason)
					held = append(held, r.tk)
					queued[i] = nil
					return i
				default:
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
	c.Done(held[0])
	assert.Equal(t, 3, granted(), "4 queued over a limit of 2: the latest")
	c.Done(held[1])
	assert.Equal(t, 2, granted(), "3 queued: still more than the limit")
	c.Done(held[2])
	assert.Equal(t, 0, granted(), "2 queued: in order")
	c.Done(held[3])
	assert.Equal(t, 1, granted())
	for _, tk := range held[4:] {
		c.Done(tk)
	}
	assert.Equal(t, 0, c.InFlight())
	assert.Equal(t, 0, c.Queued())
}

// TestControllerFarDeadlinesBounded: a sample's remaining time is
// bounded (_maxRemaining), so that far deadlines add to the window's
// sum without reaching its count's bits.
func TestControllerFarDeadlinesBounded(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxQueue: 8, MinLimit: 1, MaxLimit: 100, Now: clk.Now})
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(1000*time.Hour))
	defer cancel()
	tk, reason, ok := c.Admit(ctx, PriorityFirst) // the first arrival: sampled
	require.True(t, ok, reason)
	c.Done(tk)
	v := c.timedAcc.Load()
	assert.Equal(t, uint64(1), v>>_accShift, "one sample")
	assert.Equal(t, uint64(_maxRemaining/time.Microsecond), v&_accSum)
}
