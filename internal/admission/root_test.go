package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testWait = 5 * time.Second
	testTick = time.Millisecond
)

// share is the level admitting share s of the roots.
func share(s float64) uint64 { return uint64(s * (1 << 64)) }

// keyWhere returns the least key (from 1) whose hash is in [lo, hi).
func keyWhere(t *testing.T, lo, hi uint64) uint64 {
	t.Helper()
	for k := uint64(1); k < 1<<20; k++ {
		if h := rootHash(k); h >= lo && h < hi {
			return k
		}
	}
	t.Fatalf("no key hashes in [%x, %x)", lo, hi)
	return 0
}

func TestNextLevel(t *testing.T) {
	tests := []struct {
		name string
		give float64 // the share admitted
		move levelMove
		want float64
	}{
		{name: "a cut from every root", give: 1, move: levelCut, want: 1 - _levelCut},
		{name: "a cut", give: 0.5, move: levelCut, want: 0.5 * (1 - _levelCut)},
		{name: "a cut stops at the least share", give: _levelMin, move: levelCut, want: _levelMin},
		{name: "a step", give: 0.5, move: levelStep, want: 0.5 + _levelStep},
		{name: "a step to every root", give: 1 - _levelStep/2, move: levelStep, want: 1},
		{name: "growth with room", give: 0.5, move: levelGrow, want: 0.5 * _levelGrow},
		{name: "growth with room, at least a step", give: _levelMin, move: levelGrow, want: _levelMin + _levelStep},
		{name: "growth to every root", give: 0.99, move: levelGrow, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			give := share(tt.give)
			if tt.give >= 1 {
				give = _levelAll
			}
			got := nextLevel(give, tt.move)
			if tt.want >= 1 {
				assert.Equal(t, uint64(_levelAll), got)
				return
			}
			assert.InDelta(t, tt.want, float64(got)/(1<<64), 1e-9)
		})
	}
}

func TestAdmitsNew(t *testing.T) {
	l := share(0.4)
	below, above := share(0.2), share(0.6)
	tests := []struct {
		name string
		free int64
		give uint64 // the root's hash
		want bool
	}{
		{name: "more than the reserve free: above the level", free: _reserve + 1, give: above, want: true},
		{name: "the reserved slots: below the level", free: _reserve, give: below, want: true},
		{name: "the reserved slots: above the level", free: _reserve, give: above},
		{name: "none free: below the level", free: 0, give: below},
		{name: "queued beyond the limit", free: -3, give: below},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, admitsNew(l, tt.give, tt.free))
		})
	}
}

// TestRootHashSpreads: keys minted in sequence fall on either side of a
// level alike, and a key hashes alike every time (every service admits
// the same roots at the same level).
func TestRootHashSpreads(t *testing.T) {
	const n = 10000
	tests := []struct {
		give float64 // a level's share
	}{{0.1}, {0.5}, {0.9}}
	for _, tt := range tests {
		below := 0
		for k := uint64(1); k <= n; k++ {
			if rootHash(k) < share(tt.give) {
				below++
			}
		}
		assert.InDelta(t, tt.give, float64(below)/n, 0.02, "keys 1..%d below a level of %v", n, tt.give)
	}
	assert.Equal(t, rootHash(42), rootHash(42))
}

// pressed returns a controller whose limit (the initial one) is taken
// but for free slots, at level l, and the tickets held; the limit stays.
func pressed(t *testing.T, l uint64, free int) (*Controller, []Ticket) {
	t.Helper()
	c := New(Config{MaxQueue: 1, MinLimit: _initialLimit, MaxLimit: _initialLimit, Now: newClock().Now})
	c.level.Store(l)
	c.roots.repeat = 1 // roots seen to visit more than once: a fan-out
	return c, fill(t, c, _initialLimit-free)
}

func TestAdmitRoot(t *testing.T) {
	l := share(0.4)
	below, above := keyWhere(t, 0, l), keyWhere(t, l+1, _levelAll)
	tests := []struct {
		name       string
		level      uint64
		free       int
		give       uint64 // the root key
		started    bool   // a request of the root admitted before
		wantReason string
		wantOK     bool
	}{
		{name: "no key", level: l, free: 1, give: 0, wantOK: true},
		{name: "every root: above the level", level: _levelAll, free: 1, give: above, wantOK: true},
		{name: "room: above the level", level: l, free: _initialLimit - 1, give: above, wantOK: true},
		{name: "free beyond the reserve: above the level", level: l, free: _reserve + 1, give: above, wantOK: true},
		{name: "the last slot: above the level", level: l, free: 1, give: above, wantReason: ReasonLevel},
		{name: "the last slot: below the level", level: l, free: 1, give: below, wantOK: true},
		{name: "the last slot: started, above the level", level: l, free: 1, give: above, started: true, wantOK: true},
		{name: "none free: below the level", level: l, give: below, wantReason: ReasonLevel},
		{name: "none free: started, the queue full", level: l, give: above, started: true, wantReason: ReasonQueueFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, held := pressed(t, tt.level, tt.free)
			if tt.started {
				c.roots.admit(tt.give, rootHash(tt.give))
			}
			if tt.free == 0 {
				// The queue full, of a first attempt waiting.
				go func() {
					if tk, _, ok := c.Admit(context.Background(), PriorityFirst); ok {
						c.Done(tk)
					}
				}()
				waitQueued(t, c, 1)
			}
			tk, reason, ok := c.AdmitRoot(context.Background(), PriorityFirst, tt.give)
			assert.Equal(t, tt.wantReason, reason)
			assert.Equal(t, tt.wantOK, ok)
			if ok {
				c.Done(tk)
			}
			for _, tk := range held {
				c.Done(tk)
			}
			require.Eventually(t, func() bool { return c.InFlight() == 0 && c.Queued() == 0 }, testWait, testTick)
		})
	}
}

// TestAdmitRootMovesTheLevel: a started root refused cuts the level, a
// root started under pressure steps it, a started root's later request
// leaves it, one admitted with room grows it back to every root.
func TestAdmitRootMovesTheLevel(t *testing.T) {
	l := share(0.4)
	below, other := keyWhere(t, 0, l/4), keyWhere(t, l/4, l)

	c, held := pressed(t, l, 0)
	c.roots.admit(below, rootHash(below))
	go func() {
		if tk, _, ok := c.Admit(context.Background(), PriorityFirst); ok {
			c.Done(tk)
		}
	}()
	waitQueued(t, c, 1)
	_, reason, ok := c.AdmitRoot(context.Background(), PriorityFirst, below)
	require.False(t, ok)
	require.Equal(t, ReasonQueueFull, reason)
	assert.InDelta(t, 0.4*(1-_levelCut), c.Level(), 1e-9, "cut by a started root refused")

	c.Done(held[0]) // to the one queued
	require.Eventually(t, func() bool { return c.Queued() == 0 }, testWait, testTick)
	c.Done(held[1])
	tk, _, ok := c.AdmitRoot(context.Background(), PriorityFirst, other)
	require.True(t, ok)
	assert.InDelta(t, 0.4*(1-_levelCut)+_levelStep, c.Level(), 1e-9, "stepped by a root started under pressure")
	c.Done(tk)
	tk, _, ok = c.AdmitRoot(context.Background(), PriorityFirst, other)
	require.True(t, ok)
	assert.InDelta(t, 0.4*(1-_levelCut)+_levelStep, c.Level(), 1e-9, "left by a started root's request")
	c.Done(tk)

	for _, tk := range held[2:] {
		c.Done(tk)
	}
	require.Eventually(t, func() bool { return c.InFlight() == 0 }, testWait, testTick)
	for range 100 {
		tk, _, ok := c.AdmitRoot(context.Background(), PriorityFirst, below)
		require.True(t, ok)
		c.Done(tk)
	}
	assert.Equal(t, 1.0, c.Level(), "grown back to every root with room")
}

// TestAdmitRootConsistent: under pressure a root is admitted at every
// visit or at none, its visits among other roots' ones.
func TestAdmitRootConsistent(t *testing.T) {
	l := share(0.3)
	var roots []uint64
	for k := uint64(1); len(roots) < 40; k++ {
		if h := rootHash(k); h < share(0.2) || h > share(0.5) {
			roots = append(roots, k)
		}
	}
	c, held := pressed(t, l, 1)
	visits := make(map[uint64]int)
	for range 4 {
		for _, k := range roots {
			tk, _, ok := c.AdmitRoot(context.Background(), PriorityFirst, k)
			if ok {
				c.Done(tk)
				visits[k]++
			}
		}
	}
	for _, k := range roots {
		want := 0
		if rootHash(k) < l {
			want = 4
		}
		assert.Equal(t, want, visits[k], "root %d's visits admitted", k)
	}
	for _, tk := range held {
		c.Done(tk)
	}
}

// TestAdmitRootStartedWithRoom: a root admitted with room while the
// level is below every root (between two pressures) is started: its next
// visit under pressure takes the last slot whatever its hash, where a
// root not started is shed.
func TestAdmitRootStartedWithRoom(t *testing.T) {
	l := share(0.3)
	mid := l + (_levelAll-l)/2
	early, late := keyWhere(t, l+1, mid), keyWhere(t, mid, _levelAll)
	require.NotEqual(t, rootHash(early)%_rootSlots, rootHash(late)%_rootSlots, "two roots of one slot")
	c := New(Config{MaxQueue: 1, MinLimit: _initialLimit, MaxLimit: _initialLimit, Now: newClock().Now})
	c.roots.repeat = 1
	c.level.Store(l)
	tk, reason, ok := c.AdmitRoot(context.Background(), PriorityFirst, early)
	require.True(t, ok, reason)
	c.Done(tk)

	c.level.Store(l) // the admission with room grew it
	held := fill(t, c, _initialLimit-1)
	tk, reason, ok = c.AdmitRoot(context.Background(), PriorityFirst, early)
	assert.True(t, ok, "started with room: the last slot")
	assert.Empty(t, reason)
	if ok {
		c.Done(tk)
	}
	_, reason, ok = c.AdmitRoot(context.Background(), PriorityFirst, late)
	assert.False(t, ok, "not started, above the level")
	assert.Equal(t, ReasonLevel, reason)
	for _, tk := range held {
		c.Done(tk)
	}
}

// TestAdmitRootNoTimeToWait: under pressure with no slot free, a request
// of a started root that has less than twice the service time left is
// refused at once (it would be granted too late), and cuts the level;
// one with the time queues.
func TestAdmitRootNoTimeToWait(t *testing.T) {
	clk := newClock()
	c := New(Config{MaxQueue: 4, MinLimit: _initialLimit, MaxLimit: _initialLimit, Now: clk.Now})
	l := share(0.4)
	c.level.Store(l)
	c.roots.repeat = 1
	c.service.Store(int64(10 * time.Millisecond))
	held := fill(t, c, _initialLimit)
	below := keyWhere(t, 0, l/4)
	c.roots.admit(below, rootHash(below))

	short, cancel := context.WithDeadline(context.Background(), clk.Now().Add(15*time.Millisecond))
	defer cancel()
	_, reason, ok := c.AdmitRoot(short, PriorityFirst, below)
	assert.False(t, ok)
	assert.Equal(t, ReasonDeadline, reason)
	assert.InDelta(t, 0.4*(1-_levelCut), c.Level(), 1e-9, "cut")
	assert.Zero(t, c.Queued(), "not queued")

	queued := make(chan result, 1)
	go func() {
		tk, reason, ok := c.AdmitRoot(context.Background(), PriorityFirst, below)
		queued <- result{tk, reason, ok}
	}()
	waitQueued(t, c, 1)
	c.Done(held[0])
	r := <-queued
	require.True(t, r.ok, r.reason)
	c.Done(r.tk)
	for _, tk := range held[1:] {
		c.Done(tk)
	}
	assert.Zero(t, c.InFlight())
}

// TestAdmitRootChain: a service whose roots visit it once (a chain)
// admits their requests as Admit does under pressure, whatever the level:
// no root is shed for its hash, the last slot and the queue go to
// whoever comes.
func TestAdmitRootChain(t *testing.T) {
	l := share(0.1)
	c, held := pressed(t, l, 1)
	c.roots.repeat = 0
	var shed int
	for k := uint64(1); k <= 40; k++ {
		if rootHash(k) <= l {
			continue
		}
		tk, reason, ok := c.AdmitRoot(context.Background(), PriorityFirst, k)
		require.True(t, ok, "root %d: %s", k, reason)
		assert.Empty(t, reason)
		c.Done(tk)
		if reason == ReasonLevel {
			shed++
		}
	}
	assert.Zero(t, shed)
	assert.Less(t, c.roots.repeat, _repeatMin, "distinct roots: no repeats")
	for _, tk := range held {
		c.Done(tk)
	}
}

// TestRecentRoots: the repeat share moves toward the share of requests
// whose root was seen just before.
func TestRecentRoots(t *testing.T) {
	var r recentRoots
	for k := uint64(1); k <= 200; k++ {
		r.see(k, rootHash(k))
	}
	assert.Zero(t, r.repeat, "every root once")
	for k := uint64(1000); k < 1200; k++ {
		for range 4 { // a root's four visits
			r.see(k, rootHash(k))
		}
	}
	assert.InDelta(t, 0.75, r.repeat, 0.05, "three visits in four repeat")
}
