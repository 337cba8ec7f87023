package reqlog

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestContext(t *testing.T) {
	assert.Nil(t, FromContext(context.Background()))
	l := &Log{Procedure: "p"}
	assert.Same(t, l, FromContext(NewContext(context.Background(), l)))

	n := &Node{Context: context.WithValue(context.Background(), otherKey{}, "v")}
	assert.Same(t, &n.Log, FromContext(n))
	assert.Equal(t, "v", n.Value(otherKey{}), "the parent's values")
}

func TestFlags(t *testing.T) {
	var l Log
	assert.False(t, l.NoRetry())
	assert.False(t, l.CallerFault())
	l.SetNoRetry()
	l.SetCallerFault()
	assert.True(t, l.NoRetry())
	assert.True(t, l.CallerFault())
}

// fakeClock is a clock tests move by hand.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time               { return c.now }
func (c *fakeClock) Add(d time.Duration)          { c.now = c.now.Add(d) }
func (c *fakeClock) Call(l *Log, d time.Duration) { l.CallStarted(); c.Add(d); l.CallEnded() }

func TestCallTime(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		give string
		run  func(c *fakeClock, l *Log)
		want time.Duration
	}{
		{give: "no calls", run: func(c *fakeClock, _ *Log) { c.Add(5 * ms) }, want: 0},
		{give: "one call", run: func(c *fakeClock, l *Log) { c.Add(ms); c.Call(l, 7*ms); c.Add(ms) }, want: 7 * ms},
		{give: "calls one after the other", run: func(c *fakeClock, l *Log) { c.Call(l, 3*ms); c.Add(ms); c.Call(l, 4*ms) }, want: 7 * ms},
		{give: "calls at once count once", run: func(c *fakeClock, l *Log) {
			l.CallStarted() // [0, 10)
			c.Add(2 * ms)
			l.CallStarted() // [2, 6)
			c.Add(4 * ms)
			l.CallEnded()
			c.Add(4 * ms)
			l.CallEnded()
			c.Add(ms)
		}, want: 10 * ms},
		{give: "a call under way counts until now", run: func(c *fakeClock, l *Log) { c.Call(l, 2*ms); l.CallStarted(); c.Add(3 * ms) }, want: 5 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			c := &fakeClock{now: time.Unix(0, 0).Add(time.Hour * 24 * 365 * 50)} // far from the wrap of 2^32µs
			m, err := NewMap(Config{})
			require.NoError(t, err)
			m.WatchCalls(&parker{}, c.Now)
			c.Add(90 * time.Minute) // past one wrap of the microseconds
			l := m.Open("p")
			l.TimeCalls()
			tt.run(c, l)
			assert.Equal(t, tt.want, l.CallTime())
		})
	}
}

func TestCallTimeUntimed(t *testing.T) {
	c := &fakeClock{now: time.Unix(1, 0)}
	untimedMap, err := NewMap(Config{})
	require.NoError(t, err)
	l := untimedMap.Open("p")
	l.TimeCalls() // the Map watches no calls: nothing
	c.Call(l, time.Second)
	assert.Zero(t, l.CallTime(), "a Map that watches no calls")

	timedMap, err := NewMap(Config{})
	require.NoError(t, err)
	timedMap.WatchCalls(&parker{}, c.Now)
	l = timedMap.Open("p") // TimeCalls not called
	c.Call(l, time.Second)
	assert.Zero(t, l.CallTime(), "a Log not timed")

	var bare Log // in no Map: egress tests' Logs
	bare.TimeCalls()
	bare.CallStarted()
	bare.CallEnded()
	assert.Zero(t, bare.CallTime())
}

func TestCallTimeAfterRemove(t *testing.T) {
	c := &fakeClock{now: time.Unix(1, 0)}
	m, err := NewMap(Config{})
	require.NoError(t, err)
	m.WatchCalls(&parker{}, c.Now)
	l := m.Open("p")
	l.TimeCalls()
	l.CallStarted()
	m.Remove(l)
	c.Add(time.Millisecond)
	l.CallEnded() // a call the handler left under way ends late: reads the clock still
	assert.Equal(t, time.Millisecond, l.CallTime())
	assert.Equal(t, 0, m.Len())
}

// parker counts what a Map's Logs park.
type parker struct{ parked, unparked int }

func (p *parker) Park()   { p.parked++ }
func (p *parker) Unpark() { p.unparked++ }

// TestParking: a request parks its slot as it starts waiting for its
// calls and takes it back as it stops, once for calls made at once; once
// it ended (EndCalls) a call it left under way changes nothing, and
// EndCalls says it was parked.
func TestParking(t *testing.T) {
	c := &fakeClock{now: time.Unix(1, 0)}
	p := &parker{}
	m, err := NewMap(Config{})
	require.NoError(t, err)
	m.WatchCalls(p, c.Now)

	l := m.Open("p") // untimed: parks all the same
	c.Call(l, time.Millisecond)
	l.CallStarted()
	l.CallStarted()
	l.CallEnded()
	l.CallEnded()
	assert.Equal(t, parker{parked: 2, unparked: 2}, *p)
	assert.False(t, l.EndCalls(), "nothing under way")
	c.Call(l, time.Millisecond)
	assert.Equal(t, parker{parked: 2, unparked: 2}, *p, "ended: no more parking")
	assert.Zero(t, l.CallTime(), "untimed")

	l = m.Open("p")
	l.TimeCalls()
	l.CallStarted()
	c.Add(3 * time.Millisecond)
	assert.True(t, l.EndCalls(), "a call under way as it ended: parked")
	assert.Equal(t, 1, l.CallsInFlight())
	assert.True(t, l.CallsUnderWay())
	assert.Equal(t, 3*time.Millisecond, l.CallTime(), "until now")
	assert.False(t, l.EndCalls(), "once")
	l.CallEnded()
	assert.Equal(t, parker{parked: 3, unparked: 2}, *p, "its caller takes the slot back, not the late call")
	assert.Zero(t, l.CallsInFlight())
	assert.False(t, l.CallsUnderWay())
}

type otherKey struct{}

// TestRoot: a Log's root key is the one set; one given none mints one
// through its Map on the first ask, the same key for every call of the
// request however many ask at once; a Log of a Map that mints none, or
// of none, has no key.
func TestRoot(t *testing.T) {
	t.Run("set", func(t *testing.T) {
		m, err := NewMap(Config{})
		require.NoError(t, err)
		m.MintRoots(func() uint64 { t.Fatal("minted a key the log has"); return 1 })
		l := m.Open("p")
		l.SetRoot(0xabc)
		assert.Equal(t, uint64(0xabc), l.Root())
	})
	t.Run("minted once, on the first ask", func(t *testing.T) {
		m, err := NewMap(Config{})
		require.NoError(t, err)
		var mints atomic.Uint64
		m.MintRoots(func() uint64 { return mints.Add(1) })
		l := m.Open("p")
		assert.Zero(t, mints.Load(), "minted before a call asked")
		keys := make([]uint64, 8)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() { keys[i] = l.Root() })
		}
		wg.Wait()
		require.NotZero(t, keys[0])
		for _, k := range keys {
			assert.Equal(t, keys[0], k, "calls of one request carry one key")
		}
	})
	t.Run("no mint", func(t *testing.T) {
		m, err := NewMap(Config{})
		require.NoError(t, err)
		assert.Zero(t, m.Open("p").Root())
		assert.Zero(t, new(Log).Root())
	})
}
