package egresslog

import (
	"fmt"
	"github.com/errown/errown/ownership"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc/yarpcerrors"
)

func entry(i int) Entry {
	return Entry{Edge: Edge{CallerProcedure: "p", Service: fmt.Sprint("s", i), Procedure: "q"}, Code: yarpcerrors.CodeUnavailable, Attempts: 1}
}

func TestLogKeepsOrderAcrossInlineBoundary(t *testing.T) {
	for _, n := range []int{0, 1, _inline, _inline + 1, 3 * _inline} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var l Log
			var want []Entry
			for i := 0; i < n; i++ {
				assert.True(t, l.Append(entry(i)))
				want = append(want, entry(i))
			}
			assert.Equal(t, n, l.Len())
			got := l.Close(nil)
			assert.Equal(t, want, got)
		})
	}
}

func TestLogDropsAfterClose(t *testing.T) {
	var l Log
	assert.True(t, l.Append(entry(1)))
	assert.Len(t, l.Close(nil), 1)
	assert.False(t, l.Append(entry(2)), "append after close must be refused")
	assert.Empty(t, l.Close(nil), "second close visits nothing")
	assert.Equal(t, 1, l.Len())
}

func TestLogCloseAppendsToDst(t *testing.T) {
	var l Log
	l.Append(entry(1))
	dst := []Entry{entry(0)}
	assert.Equal(t, []Entry{entry(0), entry(1)}, l.Close(dst))
}

func TestLogConcurrentFanOut(t *testing.T) {
	var l Log
	const workers, each = 8, 100
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				l.Append(entry(i))
			}
		}()
	}
	wg.Wait()
	assert.Len(t, l.Close(nil), workers*each)
}

func TestLogConcurrentCloseNeverLoses(t *testing.T) {
	// Every Append either lands in what Close returned or reports false.
	var l Log
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if l.Append(entry(i)) {
					mu.Lock()
					accepted++
					mu.Unlock()
				}
			}
		}()
	}
	got := l.Close(nil)
	wg.Wait()
	assert.Equal(t, accepted, len(got))
}

func TestEntryFailed(t *testing.T) {
	tests := []struct {
		give Entry
		want bool
	}{
		{give: Entry{Code: yarpcerrors.CodeOK}, want: false},
		{give: Entry{Code: yarpcerrors.CodeNotFound, Class: ownership.ClassAnswer}, want: false},
		{give: Entry{Code: yarpcerrors.CodeUnavailable, Class: ownership.ClassFailure}, want: true},
		{give: Entry{Code: yarpcerrors.CodeUnavailable, Class: ownership.ClassFailure, Abandoned: true}, want: false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.Failed(), "%+v", tt.give)
	}
}

func TestEdgeString(t *testing.T) {
	assert.Equal(t, "get->users::lookup", Edge{CallerProcedure: "get", Service: "users", Procedure: "lookup"}.String())
}

func TestLogLateAppendNeverLandsInAnotherLog(t *testing.T) {
	var a Log
	assert.True(t, a.Append(entry(1)))
	assert.Equal(t, []Entry{entry(1)}, a.Close(nil)) // a's chunk goes back to the pool
	var b Log
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
				var l Log
				mine := Entry{Edge: Edge{Service: fmt.Sprint(w, "/", r)}}
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
