package retrier

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
)

// fakeTicker hands every clock the same unbuffered channel, which ticks
// only when a test calls tick, and records the tickers made and stopped.
type fakeTicker struct {
	c chan time.Time

	mu      sync.Mutex
	periods []time.Duration // of each ticker made
	stopped int
}

func newFakeTicker() *fakeTicker {
	return &fakeTicker{c: make(chan time.Time)}
}

func (f *fakeTicker) new(d time.Duration) (<-chan time.Time, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.periods = append(f.periods, d)
	return f.c, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.stopped++
	}
}

func (f *fakeTicker) option() Option {
	return withTicker(f.new)
}

// tick ticks once, and returns once the clock has read the time: the
// channel is unbuffered, and the clock's goroutine takes the second tick
// only after it handled the first.
func (f *fakeTicker) tick() {
	f.c <- time.Time{}
	f.c <- time.Time{}
}

// made returns how many tickers were made and how many stopped.
func (f *fakeTicker) made() (made []time.Duration, stopped int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.periods...), f.stopped
}

func TestCoarseTick(t *testing.T) {
	tests := []struct {
		give time.Duration // bucket width
		want time.Duration
	}{
		{give: time.Hour, want: 100 * time.Millisecond},
		{give: 2 * time.Second, want: 100 * time.Millisecond},
		{give: time.Second, want: 100 * time.Millisecond}, // the default 10s window
		{give: 500 * time.Millisecond, want: 50 * time.Millisecond},
		{give: 100 * time.Millisecond, want: 10 * time.Millisecond},
		{give: 99 * time.Millisecond, want: 0}, // too fine: exact reads
		{give: 1, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.give.String(), func(t *testing.T) {
			assert.Equal(t, tt.want, coarseTick(tt.give))
		})
	}
}

func TestBudgetClockCoarseBetweenStartAndStop(t *testing.T) {
	clock, ticker := newClock(), newFakeTicker()
	c := newBudgetClock(clock.Now, 100*time.Millisecond, ticker.new)

	clock.Advance(3 * time.Second)
	assert.Equal(t, 3*time.Second, c.Elapsed(), "before Start: exact")

	c.Start()
	assert.Equal(t, 3*time.Second, c.Elapsed(), "read at Start")
	clock.Advance(time.Second)
	assert.Equal(t, 3*time.Second, c.Elapsed(), "between ticks: as of the last")
	ticker.tick()
	assert.Equal(t, 4*time.Second, c.Elapsed(), "after a tick")
	clock.Advance(2 * time.Second)
	ticker.tick()
	assert.Equal(t, 6*time.Second, c.Elapsed(), "after another tick")

	c.Start() // runs already: no second goroutine, no new reading
	clock.Advance(time.Second)
	assert.Equal(t, 6*time.Second, c.Elapsed(), "after a second Start")
	made, stopped := ticker.made()
	assert.Equal(t, []time.Duration{100 * time.Millisecond}, made, "tickers made")
	assert.Zero(t, stopped, "tickers stopped")

	c.Stop()
	assert.Equal(t, 7*time.Second, c.Elapsed(), "after Stop: exact")
	c.Stop()
	clock.Advance(time.Second)
	assert.Equal(t, 8*time.Second, c.Elapsed(), "after a second Stop: exact")
	_, stopped = ticker.made()
	assert.Equal(t, 1, stopped, "tickers stopped")

	c.Start() // starts again
	clock.Advance(time.Second)
	ticker.tick()
	assert.Equal(t, 9*time.Second, c.Elapsed(), "restarted, after a tick")
	c.Stop()
	made, stopped = ticker.made()
	assert.Len(t, made, 2, "tickers made")
	assert.Equal(t, 2, stopped, "tickers stopped")
}

func TestBudgetClockSteppedBackReadsZero(t *testing.T) {
	clock, ticker := newClock(), newFakeTicker()
	c := newBudgetClock(clock.Now, time.Millisecond, ticker.new)
	c.Start()
	defer c.Stop()
	clock.Advance(-time.Second)
	ticker.tick()
	assert.Zero(t, c.Elapsed())
}

func TestBudgetClockWithoutTickNeverStarts(t *testing.T) {
	clock, ticker := newClock(), newFakeTicker()
	c := newBudgetClock(clock.Now, 0, ticker.new)
	c.Start()
	clock.Advance(time.Second)
	assert.Equal(t, time.Second, c.Elapsed(), "exact")
	c.Stop()
	made, _ := ticker.made()
	assert.Empty(t, made, "tickers made")
}

// TestMiddlewareStartsClockOnlyForBudgets: a middleware whose budgets
// never read the clock starts no goroutine.
func TestMiddlewareStartsClockOnlyForBudgets(t *testing.T) {
	policy := retry.PolicyConfig{Service: "callee", Idempotent: new(true)}
	tests := []struct {
		name string
		give retry.Config
		want []time.Duration // tickers made
	}{
		{name: "default budget", give: policies(policy), want: []time.Duration{100 * time.Millisecond}},
		{name: "20s window", give: retry.Config{Budget: retry.BudgetConfig{Window: 20 * time.Second}, Policies: []retry.PolicyConfig{policy}}, want: []time.Duration{100 * time.Millisecond}},
		{name: "2s window", give: retry.Config{Budget: retry.BudgetConfig{Window: 2 * time.Second}, Policies: []retry.PolicyConfig{policy}}, want: []time.Duration{20 * time.Millisecond}},
		{name: "500ms window", give: retry.Config{Budget: retry.BudgetConfig{Window: 500 * time.Millisecond}, Policies: []retry.PolicyConfig{policy}}},
		{name: "no policies", give: retry.Config{}},
		{name: "budget disabled", give: retry.Config{Budget: retry.BudgetConfig{Disabled: true}, Policies: []retry.PolicyConfig{policy}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ticker := newFakeTicker()
			m := newMiddleware(t, tt.give, newClock().option(), ticker.option())
			require.NoError(t, m.Start())
			require.NoError(t, m.Stop())
			made, stopped := ticker.made()
			assert.Equal(t, tt.want, made, "tickers made")
			assert.Len(t, made, stopped, "tickers stopped")
		})
	}
}

// clockStep is one step of TestBudgetEpochs: a lifecycle change, if any,
// then the clock moves on by advance and ticks ticks times, then calls
// succeeding calls are made.
type clockStep struct {
	life    string // "", "start" or "stop"
	advance time.Duration
	ticks   int
	calls   int
	want    map[int64]int64 // requests by epoch, of the buckets that count any
}

func TestBudgetEpochs(t *testing.T) {
	lifecycle := map[string]func(*Middleware) error{
		"":      func(*Middleware) error { return nil },
		"start": (*Middleware).Start,
		"stop":  (*Middleware).Stop,
	}
	// A 10s window: 1s buckets.
	steps := []clockStep{
		// Before Start, every call reads the clock.
		{advance: 1500 * time.Millisecond, calls: 2, want: map[int64]int64{1: 2}},
		// Started at 1.5s: until the next tick, calls read 1.5s.
		{life: "start", advance: time.Second, calls: 3, want: map[int64]int64{1: 5}},
		// The tick reads 2.5s.
		{ticks: 1, calls: 4, want: map[int64]int64{1: 5, 2: 4}},
		{advance: 100 * time.Millisecond, ticks: 1, calls: 1, want: map[int64]int64{1: 5, 2: 5}},
		// At 11.6s, epoch 11 takes epoch 1's bucket.
		{advance: 9 * time.Second, ticks: 1, calls: 1, want: map[int64]int64{2: 5, 11: 1}},
		// After Stop, every call reads the clock again: 12.6s.
		{life: "stop", advance: time.Second, calls: 1, want: map[int64]int64{11: 1, 12: 1}},
		{advance: time.Second, calls: 2, want: map[int64]int64{11: 1, 12: 1, 13: 2}},
	}
	clock, ticker := newClock(), newFakeTicker()
	cfg := retry.Config{
		Budget:   retry.BudgetConfig{Ratio: 0.1, NoFloor: true, Window: 10 * time.Second},
		Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}},
	}
	m := newMiddleware(t, cfg, clock.option(), ticker.option())
	defer func() { assert.NoError(t, m.Stop()) }()
	out := newOutbound(succeed("ok"))
	for i, s := range steps {
		require.NoError(t, lifecycle[s.life](m), "step %d", i)
		clock.Advance(s.advance)
		for range s.ticks {
			ticker.tick()
		}
		for range s.calls {
			_, err := m.Call(context.Background(), req("callee", "get", "x"), out)
			require.NoError(t, err)
		}
		assert.Equal(t, s.want, bucketRequests(m.callees["callee"].budget), "step %d", i)
	}
}

// bucketRequests returns the requests of b's buckets that count any, by
// epoch.
func bucketRequests(b *budget) map[int64]int64 {
	got := make(map[int64]int64)
	for i := range b.buckets {
		if n := b.buckets[i].requests.Load(); n > 0 {
			got[b.buckets[i].epoch.Load()] = n
		}
	}
	return got
}

func TestBudgetClockRealTimeAdvances(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}))
	c := m.clock
	assert.False(t, c.Coarse(), "before Start: exact")

	require.NoError(t, m.Start())
	require.True(t, c.Coarse(), "started: coarse")
	first := c.Elapsed()
	assert.Eventually(t, func() bool { return c.Elapsed() > first }, 5*time.Second, time.Millisecond, "coarse reading advances")
	require.NoError(t, m.Stop())

	assert.False(t, c.Coarse(), "after Stop: exact")
	before := c.Elapsed()
	testtime.Sleep(time.Millisecond)
	assert.Greater(t, c.Elapsed(), before, "exact reading advances")
}

// TestMiddlewareStartStopConcurrentWithCalls runs calls while the clock
// starts and stops (for -race), and checks every call was counted.
func TestMiddlewareStartStopConcurrentWithCalls(t *testing.T) {
	m := newMiddleware(t, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}))
	out := newOutbound(succeed("ok"))
	const goroutines, calls = 4, 200
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range calls {
				_, _ = m.Call(context.Background(), req("callee", "get", "x"), out)
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			for range 20 {
				assert.NoError(t, m.Start())
				assert.NoError(t, m.Stop())
			}
		})
	}
	wg.Wait()
	requests, _ := m.callees["callee"].budget.counts()
	assert.EqualValues(t, goroutines*calls, requests)
	assert.NoError(t, m.Stop())
}

// nopOutbound answers every call with an empty response, at no cost.
type nopOutbound struct{}

func (nopOutbound) Transports() []transport.Transport { return nil }
func (nopOutbound) Start() error                      { return nil }
func (nopOutbound) Stop() error                       { return nil }
func (nopOutbound) IsRunning() bool                   { return true }

func (nopOutbound) Call(context.Context, *transport.Request) (*transport.Response, error) {
	return &transport.Response{}, nil
}

// BenchmarkBudgetClock is a deposit into a callee's budget, and a
// succeeding call through the middleware, with the clock read on every
// call (as without Start) and with the coarse clock started.
func BenchmarkBudgetClock(b *testing.B) {
	newM := func(b *testing.B, started bool) *Middleware {
		m := newMiddleware(b, policies(retry.PolicyConfig{Service: "callee", Idempotent: new(true)}))
		if started {
			require.NoError(b, m.Start())
			b.Cleanup(func() { _ = m.Stop() })
		}
		return m
	}
	for _, started := range []bool{false, true} {
		name := map[bool]string{false: "exact", true: "coarse"}[started]
		b.Run(fmt.Sprintf("deposit/%s", name), func(b *testing.B) {
			bg := newM(b, started).callees["callee"].budget
			b.ReportAllocs()
			for b.Loop() {
				bg.deposit()
			}
		})
		b.Run(fmt.Sprintf("deposit-parallel/%s", name), func(b *testing.B) {
			bg := newM(b, started).callees["callee"].budget
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bg.deposit()
				}
			})
		})
		b.Run(fmt.Sprintf("call/%s", name), func(b *testing.B) {
			m := newM(b, started)
			out := nopOutbound{}
			r := req("callee", "get", "")
			r.Body = nil
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Call(context.Background(), r, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
