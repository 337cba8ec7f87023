package calls

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/yarpcerrors"
)

// entry is a failed call on an edge of its own.
func entry(i int) Entry {
	return Entry{Edge: ownership.Edge{CallerProcedure: "p", Service: fmt.Sprint("s", i), Procedure: "q"}, Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Attempts: 1}
}

// ok is a call that succeeded.
func ok(i int) Entry {
	return Entry{Edge: ownership.Edge{CallerProcedure: "p", Service: fmt.Sprint("s", i), Procedure: "q"}, Code: yarpcerrors.CodeOK, Attempts: 1}
}

func TestLogKeepsFailuresInOrderAcrossInlineBoundary(t *testing.T) {
	for _, n := range []int{0, 1, _inline, _inline + 1, 3 * _inline, MaxFailures} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var l EgressLog
			var want []Entry
			for i := 0; i < n; i++ {
				assert.True(t, l.Append(entry(i)))
				want = append(want, entry(i))
			}
			assert.Equal(t, n, l.Len())
			got := l.Close(nil)
			assert.Equal(t, want, got)
			assert.Equal(t, Counts{Stored: n}, l.Counts())
		})
	}
}

func TestLogKeepsOnlyFailures(t *testing.T) {
	// 10,000 calls that did not fail and 3 that did: the log keeps the 3
	// and counts the rest.
	const notFailed = 10_000
	answer := Entry{Code: yarpcerrors.CodeNotFound, Class: wire.ClassAnswer, Attempts: 1}
	abandoned := Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Abandoned: true, Attempts: 1}
	var l EgressLog
	var want []Entry
	for i := range notFailed {
		var e Entry
		switch i % 3 {
		case 0:
			e = ok(i)
		case 1:
			e = answer
		default:
			e = abandoned
		}
		assert.True(t, l.Append(e))
		if i%4000 == 0 {
			assert.True(t, l.Append(entry(i)))
			want = append(want, entry(i))
		}
	}
	require.Len(t, want, 3)
	assert.Equal(t, notFailed+3, l.Len())
	assert.Equal(t, want, l.Close(nil))
	assert.Equal(t, Counts{Stored: 3, NotFailed: notFailed}, l.Counts())
}

func TestLogBoundsFailures(t *testing.T) {
	tests := []struct {
		name string
		give int // failures, every third with RCS false
		want Counts
	}{
		{name: "at the bound", give: MaxFailures, want: Counts{Stored: MaxFailures}},
		{name: "one over", give: MaxFailures + 1, want: Counts{Stored: MaxFailures, Overflow: 1, OverflowUnsatisfied: 0}},
		{name: "far over", give: MaxFailures + 300, want: Counts{Stored: MaxFailures, Overflow: 300, OverflowUnsatisfied: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l EgressLog
			var want []Entry
			for i := 0; i < tt.give; i++ {
				e := entry(i)
				e.RCS = i%3 != 0
				assert.True(t, l.Append(e), "an overflowed failure is taken, and counted")
				if i < MaxFailures {
					want = append(want, e)
				}
			}
			assert.Equal(t, tt.want, l.Counts(), "before close")
			assert.Equal(t, want, l.Close(nil), "the first MaxFailures")
			assert.Equal(t, tt.want, l.Counts(), "after close")
			assert.Equal(t, tt.give, l.Len())
		})
	}
}

func TestLogDropsAfterClose(t *testing.T) {
	var l EgressLog
	assert.True(t, l.Append(entry(1)))
	assert.True(t, l.Append(ok(1)))
	assert.Len(t, l.Close(nil), 1)
	assert.False(t, l.Append(entry(2)), "a failure after close must be refused")
	assert.False(t, l.Append(ok(2)), "a success after close must be refused")
	assert.Empty(t, l.Close(nil), "second close visits nothing")
	assert.Equal(t, Counts{Stored: 1, NotFailed: 1}, l.Counts(), "late calls are not counted")
	assert.Equal(t, 2, l.Len())
}

func TestLogCloseAppendsToDst(t *testing.T) {
	var l EgressLog
	l.Append(entry(1))
	dst := []Entry{entry(0)}
	assert.Equal(t, []Entry{entry(0), entry(1)}, l.Close(dst))
}

func TestLogNotFailedDoesNotAllocate(t *testing.T) {
	var l EgressLog
	e := ok(1)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { l.Append(e) }))
	assert.Equal(t, Counts{NotFailed: 1001}, l.Counts())
}

func TestLogConcurrentFanOut(t *testing.T) {
	var l EgressLog
	const workers, each = 8, 100 // 800 failures: past the bound
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				l.Append(entry(i))
				l.Append(ok(i))
			}
		}()
	}
	wg.Wait()
	assert.Len(t, l.Close(nil), MaxFailures)
	assert.Equal(t, Counts{
		Stored:              MaxFailures,
		Overflow:            workers*each - MaxFailures,
		OverflowUnsatisfied: workers*each - MaxFailures,
		NotFailed:           workers * each,
	}, l.Counts())
}

func TestLogConcurrentCloseNeverLoses(t *testing.T) {
	// Every Append either is in what Close returned and Counts reports,
	// or reports false.
	var l EgressLog
	var wg sync.WaitGroup
	var failed, notFailed atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if l.Append(entry(i)) {
					failed.Add(1)
				}
				if l.Append(ok(i)) {
					notFailed.Add(1)
				}
			}
		}()
	}
	got := l.Close(nil)
	wg.Wait()
	c := l.Counts()
	assert.Equal(t, len(got), c.Stored)
	assert.Equal(t, failed.Load(), int64(c.Stored+c.Overflow))
	assert.Equal(t, notFailed.Load(), int64(c.NotFailed))
}

func TestEntryFailed(t *testing.T) {
	tests := []struct {
		give Entry
		want bool
	}{
		{give: Entry{Code: yarpcerrors.CodeOK}, want: false},
		{give: Entry{Code: yarpcerrors.CodeNotFound, Class: wire.ClassAnswer}, want: false},
		{give: Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure}, want: true},
		{give: Entry{Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Abandoned: true}, want: false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.Failed(), "%+v", tt.give)
	}
}

func TestEdgeString(t *testing.T) {
	assert.Equal(t, "get->users::lookup", ownership.Edge{CallerProcedure: "get", Service: "users", Procedure: "lookup"}.String())
}

func TestLogLateAppendNeverLandsInAnotherLog(t *testing.T) {
	var a EgressLog
	assert.True(t, a.Append(entry(1)))
	assert.Equal(t, []Entry{entry(1)}, a.Close(nil)) // a's chunk goes back to the pool
	var b EgressLog
	assert.True(t, b.Append(entry(2))) // may take a's chunk
	assert.False(t, a.Append(entry(3)), "a is closed")
	assert.Equal(t, []Entry{entry(2)}, b.Close(nil))
	assert.Equal(t, 1, a.Len())
}

func TestLogPooledChunksNeverShared(t *testing.T) {
	// Many logs at once, each with a late appender racing its Close: every
	// log gets back exactly the entries it accepted, all its own, while
	// chunks pass from log to log through the pool.
	const workers, rounds, appends = 16, 200, _inline + 2
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				var l EgressLog
				mine := Entry{Edge: ownership.Edge{Service: fmt.Sprint(w, "/", r)}, Class: wire.ClassFailure}
				accepted := make(chan int)
				go func() {
					n := 0
					for range appends {
						if l.Append(mine) {
							n++
						}
					}
					accepted <- n
				}()
				got := l.Close(nil)
				n := <-accepted
				assert.False(t, l.Append(mine), "closed")
				assert.Len(t, got, n)
				for _, e := range got {
					assert.Equal(t, mine, e)
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkLogAppend compares logging a call with the least it could
// cost: one locked counter increment.
func BenchmarkLogAppend(b *testing.B) {
	b.Run("baseline-locked-increment", func(b *testing.B) {
		var mu sync.Mutex
		var n int64
		b.ReportAllocs()
		for b.Loop() {
			mu.Lock()
			n++
			mu.Unlock()
		}
		_ = n
	})
	b.Run("not-failed", func(b *testing.B) {
		var l EgressLog
		e := ok(1)
		b.ReportAllocs()
		for b.Loop() {
			l.Append(e)
		}
	})
	b.Run("not-failed-parallel", func(b *testing.B) {
		var l EgressLog
		e := ok(1)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Append(e)
			}
		})
	})
	b.Run("request-with-one-failure", func(b *testing.B) {
		failure, success := entry(1), ok(1)
		b.ReportAllocs()
		for b.Loop() {
			var l EgressLog
			l.Append(success)
			l.Append(failure)
			_ = l.Close(nil)
		}
	})
}

func TestLogLast(t *testing.T) {
	var l EgressLog
	a := ownership.Edge{CallerProcedure: "p", Service: "a", Procedure: "x"}
	b := ownership.Edge{CallerProcedure: "p", Service: "b", Procedure: "x"}
	_, ok := l.Last(a)
	assert.False(t, ok, "nothing logged")
	l.Append(Entry{Edge: a, Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimClaimed})
	l.Append(Entry{Edge: b, Code: yarpcerrors.CodeInternal, Class: wire.ClassFailure})
	l.Append(Entry{Edge: a, Code: yarpcerrors.CodeUnavailable, Class: wire.ClassFailure, Claim: ownership.ClaimUnclaimed})
	l.Append(Entry{Edge: a, Code: yarpcerrors.CodeOK}) // a success: counted, not kept
	got, ok := l.Last(a)
	assert.True(t, ok)
	assert.Equal(t, ownership.ClaimUnclaimed, got.Claim, "the latest failure on the edge")
	got, ok = l.Last(b)
	assert.True(t, ok)
	assert.Equal(t, yarpcerrors.CodeInternal, got.Code)
	l.Close(nil)
	_, ok = l.Last(a)
	assert.False(t, ok, "a closed log keeps nothing")
}

// handedOver is what s says, without the chunk it holds.
func handedOver(s Summary) Summary {
	s.chunk = nil
	return s
}

// CloseSummary hands over a log's failures, Counts and Storm as it closes
// it: a quiet log without a lock, one with failures or Storms under it.
func TestCloseSummary(t *testing.T) {
	var quiet EgressLog
	require.True(t, quiet.Append(ok(1)))
	require.True(t, quiet.Append(ok(2)))
	sum := quiet.CloseSummary()
	assert.Equal(t, Summary{Counts: Counts{NotFailed: 2}, Storm: wire.KnownFigures(wire.Storm{Served: 3, Blind: 3})}, sum)
	assert.False(t, quiet.Append(ok(3)), "closed: a late call is refused")
	assert.False(t, quiet.Append(entry(3)), "closed: a late failure is refused")
	assert.Equal(t, sum, quiet.CloseSummary(), "again: the same")

	var failing EgressLog
	require.True(t, failing.Append(ok(1)))
	require.True(t, failing.Append(entry(2)))
	require.True(t, failing.AppendStorm(entry(3), wire.KnownFigures(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1})))
	sum = failing.CloseSummary()
	assert.Equal(t, []Entry{entry(2), entry(3)}, sum.Failures)
	assert.Equal(t, Counts{Stored: 2, NotFailed: 1}, sum.Counts)
	assert.Equal(t, wire.KnownFigures(wire.Storm{Served: 1 + 1 + 2, Blind: 1 + 1 + 2, Retries: 1, Radius: 1, BlindRadius: 1}), sum.Storm,
		"the request, its quiet call and the retried call's Storm; the failure without one is not counted")
	assert.False(t, failing.Append(entry(4)), "closed")
	again := failing.CloseSummary()
	assert.Empty(t, again.Failures, "handed over once")
	assert.Equal(t, sum.Counts, again.Counts)
	assert.False(t, again.Storm.Known, "the Storms went with the first summary: unknown, not quiet")
	assert.Empty(t, failing.Close(nil), "handed over once")
	assert.Equal(t, sum.Counts, failing.Counts(), "the log keeps its counts")
	assert.False(t, failing.StormAdded(), "the Storms went with the summary")

	// The summary's failures stay its own until its Release, whatever
	// other logs do meanwhile; then the chunk serves another log.
	var other EgressLog
	require.True(t, other.Append(entry(9)))
	assert.Equal(t, []Entry{entry(2), entry(3)}, sum.Failures)
	sum.Release()
	assert.Nil(t, sum.Failures)
	sum.Release() // twice: nothing
	failing.Release()
	assert.Equal(t, []Entry{entry(9)}, other.CloseSummary().Failures)

	var unknown EgressLog
	require.True(t, unknown.AddStorm(wire.Figures{}, false))
	require.True(t, unknown.Append(ok(1)))
	sum = unknown.CloseSummary()
	assert.False(t, sum.Storm.Known, "a call's Storm was unknown")
	assert.Equal(t, Counts{NotFailed: 1}, sum.Counts)
}

func TestCloseQuiet(t *testing.T) {
	var quiet EgressLog
	require.True(t, quiet.Append(ok(1)))
	require.True(t, quiet.Append(ok(2)))
	require.True(t, quiet.CloseQuiet(), "no failure, no Storm: closed quietly")
	assert.False(t, quiet.Late(), "nothing came late")
	assert.False(t, quiet.Append(ok(3)), "closed: a late call is refused")
	assert.False(t, quiet.Append(entry(3)), "closed: a late failure is refused")
	assert.True(t, quiet.Late(), "late")
	assert.Equal(t, Summary{Counts: Counts{NotFailed: 2}, Storm: wire.KnownFigures(wire.Storm{Served: 3, Blind: 3})}, quiet.CloseSummary(),
		"CloseSummary after it: the quiet summary of the calls before the close")

	for name, fill := range map[string]func(*EgressLog) bool{
		"a failure": func(l *EgressLog) bool { return l.Append(entry(2)) },
		"a Storm": func(l *EgressLog) bool {
			return l.AddStorm(wire.KnownFigures(wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}), false)
		},
	} {
		var l EgressLog
		require.True(t, l.Append(ok(1)), name)
		require.True(t, fill(&l), name)
		assert.False(t, l.CloseQuiet(), "%s: not quiet", name)
		require.True(t, l.Append(ok(3)), "%s: left open", name)
		sum := l.CloseSummary()
		assert.Equal(t, 2, sum.Counts.NotFailed, "%s: the calls that did not fail, the one after CloseQuiet included", name)
		sum.Release()
	}
}

// TestCloseQuietRacesAFailure: a failure taken after CloseQuiet found no
// chunk and before it closed the log (the hook) makes the close fail: not
// quiet, the log left open, CloseSummary hands the failure over. Then the
// two from two goroutines, released together, many times over, for the
// race detector and for whichever order they meet in: either the close
// was quiet and the failure refused (the log late), or the failure was
// kept and the close was not quiet. Never a quiet close with the failure
// taken, nor a failure lost.
func TestCloseQuietRacesAFailure(t *testing.T) {
	t.Run("between check and close", func(t *testing.T) {
		var l EgressLog
		require.True(t, l.Append(ok(0)))
		took := false
		_testHookQuiet = func(hooked *EgressLog) {
			if hooked == &l && !took {
				took = l.Append(entry(1))
			}
		}
		defer func() { _testHookQuiet = nil }()
		assert.False(t, l.CloseQuiet(), "a failure came before the close: not quiet")
		require.True(t, took, "the log was open")
		assert.False(t, l.Late())
		sum := l.CloseSummary()
		assert.Equal(t, []Entry{entry(1)}, sum.Failures, "the failure handed over")
		assert.Equal(t, Counts{Stored: 1, NotFailed: 1}, sum.Counts)
		sum.Release()
		l.Release()
	})
	t.Run("concurrent", func(t *testing.T) {
		quiets, kepts := 0, 0
		for i := range 2000 {
			var l EgressLog
			require.True(t, l.Append(ok(0)))
			var ready, start atomic.Bool
			took := make(chan bool)
			go func() {
				ready.Store(true)
				for n := 0; !start.Load(); n++ {
					if n > 1000 { // one core, or a busy machine
						runtime.Gosched()
					}
				}
				took <- l.Append(entry(i))
			}()
			for !ready.Load() {
				runtime.Gosched()
			}
			start.Store(true)
			quiet := l.CloseQuiet()
			kept := <-took
			if quiet {
				quiets++
				require.False(t, kept, "run %d: a failure taken by a log closed quietly", i)
				require.True(t, l.Late(), "run %d: the refused failure makes the log late", i)
				require.Empty(t, l.Close(nil), "run %d", i)
			} else {
				kepts++
				require.True(t, kept, "run %d: not quiet, but no failure taken", i)
				sum := l.CloseSummary()
				require.Equal(t, []Entry{entry(i)}, sum.Failures, "run %d: the failure handed over", i)
				require.False(t, l.Late(), "run %d", i)
				sum.Release()
			}
			l.Release()
		}
		t.Logf("quiet closes %d, failures kept %d", quiets, kepts)
	})
}

// A close in the narrowest window: a failure or a Storm found the log
// open and is about to give it a chunk when the log closes, with
// CloseSummary or CloseQuiet, and finds no chunk. The call must be
// refused, and the log late.
func TestLogCloseSummaryBetweenCheckAndChunk(t *testing.T) {
	quietSum := Summary{Counts: Counts{NotFailed: 1}, Storm: wire.KnownFigures(wire.Storm{Served: 2, Blind: 2})}
	for _, tt := range []struct {
		name string
		call func(*EgressLog) bool
	}{
		{"failure", func(l *EgressLog) bool { return l.Append(entry(1)) }},
		{"Storm", func(l *EgressLog) bool { return l.AddStorm(wire.KnownFigures(wire.One), true) }},
	} {
		for _, closer := range []string{"CloseSummary", "CloseQuiet"} {
			t.Run(tt.name+"/"+closer, func(t *testing.T) {
				var l EgressLog
				require.True(t, l.Append(ok(0)))
				var sum Summary
				quiet := false
				_testHookTake = func(hooked *EgressLog) {
					if hooked != &l {
						return
					}
					if closer == "CloseQuiet" {
						quiet = l.CloseQuiet()
					} else {
						sum = l.CloseSummary()
					}
				}
				defer func() { _testHookTake = nil }()
				assert.False(t, tt.call(&l), "refused: the log closed quietly first")
				if closer == "CloseQuiet" {
					assert.True(t, quiet, "no chunk yet when it closed")
					// CloseSummary after it: the quiet summary of the
					// call before the close.
					closed := l.CloseSummary()
					defer closed.Release()
					sum = handedOver(closed)
				}
				assert.Equal(t, quietSum, sum, "no chunk yet when it closed")
				assert.True(t, l.Late(), "a call came after Close")
				assert.False(t, l.StormAdded())
				assert.Empty(t, l.Close(nil))
				l.Release()
			})
		}
	}
}

// A failure or a Storm taken in the other narrow window: after
// CloseSummary found no chunk, before it closed. It must not close
// quietly: it hands the failure and the Storm over.
func TestLogCallBetweenCloseSummaryCheckAndClose(t *testing.T) {
	for _, tt := range []struct {
		name string
		call func(*EgressLog) bool
		want Summary
	}{
		{
			"failure", func(l *EgressLog) bool { return l.Append(entry(1)) },
			Summary{Failures: []Entry{entry(1)}, Counts: Counts{Stored: 1}, Storm: wire.KnownFigures(wire.One)},
		},
		{
			"Storm", func(l *EgressLog) bool { return l.AddStorm(wire.KnownFigures(wire.One), false) },
			Summary{Storm: wire.KnownFigures(wire.Storm{Served: 2, Blind: 2})},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l EgressLog
			took := false
			_testHookClose = func(hooked *EgressLog) {
				if hooked == &l {
					took = tt.call(&l)
				}
			}
			defer func() { _testHookClose = nil }()
			sum := l.CloseSummary()
			require.True(t, took, "the log was open")
			require.NotNil(t, sum.chunk, "the log's chunk goes with the summary")
			assert.Equal(t, tt.want, handedOver(sum), "the call is handed over")
			assert.False(t, l.Late())
			sum.Release()
		})
	}
}

// CloseSummary racing the handler's calls: whatever interleaving, every
// call Append, AddStorm or AppendStorm took is in what the close reports,
// and every one they refused makes the log late.
func TestLogConcurrentCloseSummaryNeverLoses(t *testing.T) {
	for range 2000 {
		var l EgressLog
		var failed, notFailed, storms, stormOnly, refused atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var took bool
				switch w {
				case 0:
					if took = l.Append(entry(w)); took {
						failed.Add(1)
					}
				case 1:
					if took = l.Append(ok(w)); took {
						notFailed.Add(1)
					}
				case 2:
					// A failed call's Storm alone: its request counts.
					if took = l.AddStorm(wire.KnownFigures(wire.One), true); took {
						storms.Add(1)
						stormOnly.Add(1)
					}
				default:
					if took = l.AppendStorm(ok(w), wire.KnownFigures(wire.One)); took {
						storms.Add(1)
						notFailed.Add(1)
					}
				}
				if !took {
					refused.Add(1)
				}
			}()
		}
		close(start)
		sum := l.CloseSummary()
		got, counts := sum.Failures, sum.Counts
		wg.Wait()
		require.True(t, sum.Storm.Known)
		require.Equal(t, uint64(1+notFailed.Load()+stormOnly.Load()), sum.Storm.Storm.Served,
			"the request, every call that did not fail (with a Storm or not) and the failed call's Storm")
		require.Equal(t, int(failed.Load()), len(got), "failures handed over")
		require.Equal(t, int(failed.Load()), counts.Stored)
		require.Equal(t, int(notFailed.Load()), counts.NotFailed, "calls that did not fail")
		require.Equal(t, storms.Load()+failed.Load() > 0, sum.chunk != nil, "the chunk of what was taken goes with the summary")
		require.Equal(t, refused.Load() > 0, l.Late(), "late")
		sum.Release()
		l.Release()
	}
}

// A request's Storms live in the log's chunk: added until the log closes,
// read until Release, gone after.
func TestLogStorms(t *testing.T) {
	var l EgressLog
	require.True(t, l.StormTotal(0).Known)
	assert.False(t, l.StormAdded())
	assert.Equal(t, wire.KnownFigures(wire.Storm{Served: 3, Blind: 3}), l.StormTotal(2), "no Storm added: the request and its two quiet calls")

	suppressed := wire.Storm{Served: 9, Blind: 18, Retries: 1, Radius: 1, BlindRadius: 2}
	require.True(t, l.AddStorm(wire.KnownFigures(suppressed), true))
	require.True(t, l.Append(entry(1)))
	require.True(t, l.Append(ok(2)))
	assert.True(t, l.StormAdded())
	got, counts := l.CloseCounts(nil)
	assert.Equal(t, []Entry{entry(1)}, got)
	assert.False(t, l.AddStorm(wire.Figures{}, false), "closed: a late Storm is refused")
	_, late := l.Last(entry(1).Edge)
	assert.False(t, late, "closed: nothing to look up")
	assert.Equal(t, wire.KnownFigures(wire.Storm{Served: 11, Blind: 20, Retries: 1, Radius: 1, BlindRadius: 2}), l.StormTotal(counts.NotFailed),
		"the late unknown Storm was not added")

	l.Release()
	assert.False(t, l.StormAdded(), "released: the Storms are gone")
	assert.False(t, l.StormTotal(counts.NotFailed).Known, "released: unknown, not the quiet figure")
	assert.Equal(t, Counts{Stored: 1, NotFailed: 1}, l.Counts(), "the counts stay")
	l.Release() // twice: nothing

	var open EgressLog
	require.True(t, open.AddStorm(wire.Figures{}, false))
	open.Release() // open: nothing
	assert.False(t, open.StormTotal(0).Known, "an open log keeps its Storms through Release")
}

// AppendStorm takes a call and its Storm together, or neither once the
// log is closed.
func TestLogAppendStorm(t *testing.T) {
	retried := wire.Storm{Served: 2, Blind: 2, Retries: 1, Radius: 1, BlindRadius: 1}
	var l EgressLog
	require.True(t, l.AppendStorm(entry(1), wire.KnownFigures(retried)), "a failure")
	require.True(t, l.AppendStorm(ok(2), wire.KnownFigures(retried)), "a success after a retry")
	require.True(t, l.Append(ok(3)), "a quiet success")
	got, counts := l.CloseCounts(nil)
	assert.Equal(t, []Entry{entry(1)}, got)
	assert.Equal(t, Counts{Stored: 1, NotFailed: 2}, counts)
	st := l.StormTotal(counts.NotFailed)
	assert.Equal(t, wire.KnownFigures(wire.Storm{Served: 1 + 1 + 2 + 2, Blind: 1 + 1 + 2 + 2, Retries: 2, Radius: 1, BlindRadius: 1}), st,
		"the request, its quiet call, and both calls' Storms")

	assert.False(t, l.AppendStorm(entry(4), wire.Figures{}), "closed")
	assert.False(t, l.AppendStorm(ok(5), wire.Figures{}), "closed")
	assert.True(t, l.Late())
	assert.Equal(t, counts, l.Counts(), "neither counted")
	assert.Equal(t, st, l.StormTotal(counts.NotFailed), "the late unknown Storms were not added")

	var past EgressLog
	for i := range MaxFailures + 3 {
		require.True(t, past.AppendStorm(entry(i), wire.KnownFigures(wire.One)))
	}
	got, counts = past.CloseCounts(nil)
	assert.Len(t, got, MaxFailures)
	assert.Equal(t, 3, counts.Overflow, "failures past the bound are counted")
}

// A failed request's log, its Storm and its failure, allocates nothing
// once the chunks' pool has one to give.
func TestLogFailureDoesNotAllocate(t *testing.T) {
	e := entry(1)
	var (
		l   EgressLog
		buf [_inline]Entry // the inbound middleware's, on its stack
	)
	run := func() {
		l = EgressLog{}
		l.AddStorm(wire.KnownFigures(wire.One), true)
		l.Append(e)
		_, counts := l.CloseCounts(buf[:0])
		l.StormTotal(counts.NotFailed)
		l.Release()
	}
	run()
	allowed := 0.0
	if raceEnabled {
		allowed = 1 // the race detector's pools drop some of what they are given back: a chunk anew
	}
	assert.LessOrEqual(t, testing.AllocsPerRun(1000, run), allowed)
}

// The inbound middleware's way: CloseSummary, then the Summary's Release.
// A failed request's log allocates nothing once the pool has a chunk.
func TestLogCloseSummaryDoesNotAllocate(t *testing.T) {
	e := entry(1)
	var l EgressLog
	run := func() {
		l = EgressLog{}
		l.AppendStorm(e, wire.KnownFigures(wire.One))
		sum := l.CloseSummary()
		if len(sum.Failures) != 1 { // tested first: testify allocates, and run is measured
			require.Len(t, sum.Failures, 1, "handed over")
		}
		sum.Release()
		l.Release()
	}
	run()
	allowed := 0.0
	if raceEnabled {
		allowed = 1 // the race detector's pools drop some of what they are given back
	}
	assert.LessOrEqual(t, testing.AllocsPerRun(1000, run), allowed)
}

// Late says whether any call came after Close, failed or not, or its
// Storm did: the request's figures then miss it.
func TestLogLate(t *testing.T) {
	for _, tt := range []struct {
		name string
		late func(*EgressLog) bool // what comes after Close, and whether it was taken
	}{
		{"nothing", nil},
		{"a call that did not fail", func(l *EgressLog) bool { return l.Append(ok(9)) }},
		{"a failure", func(l *EgressLog) bool { return l.Append(entry(9)) }},
		{"a Storm", func(l *EgressLog) bool { return l.AddStorm(wire.Figures{}, false) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l EgressLog
			require.True(t, l.Append(ok(1)))
			require.True(t, l.Append(entry(2)))
			assert.False(t, l.Late(), "open: nothing is late yet")
			_, counts := l.CloseCounts(nil)
			assert.False(t, l.Late(), "closed, nothing after")
			if tt.late == nil {
				return
			}
			assert.False(t, tt.late(&l), "refused")
			assert.True(t, l.Late())
			assert.Equal(t, counts, l.Counts(), "the counts stay final")
		})
	}
	t.Run("after a quiet close", func(t *testing.T) {
		var l EgressLog
		require.True(t, l.Append(ok(1)))
		counts := l.CloseSummary().Counts
		assert.False(t, l.Late(), "closed, nothing after")
		assert.False(t, l.Append(ok(2)), "refused")
		assert.True(t, l.Late())
		assert.Equal(t, counts, l.Counts(), "the counts stay final")
	})
}
