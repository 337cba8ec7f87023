package ingress

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestDecisionsNewestFirst(t *testing.T) {
	var d decisions
	assert.Empty(t, d.list())
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 1; i <= _recentDecisions+3; i++ {
		d.add(record{time: at, procedure: "p", failedCalls: i, code: yarpcerrors.CodeUnavailable, class: wire.ClassFailure, claim: ownership.ClaimClaimed, reason: ReasonOwnFailure}, procedureHash("p"))
	}
	got := d.list()
	require.Len(t, got, _recentDecisions)
	for i, dec := range got {
		assert.Equal(t, _recentDecisions+3-i, dec.FailedCalls, "newest first")
	}
	assert.Equal(t, inbound.Decision{Time: at, Procedure: "p", Code: "unavailable", Claim: "claimed", FailedCalls: _recentDecisions + 3, Reason: ReasonOwnFailure}, got[0])
	assert.Equal(t, got, d.list(), "listing changes nothing")
}

func TestDecisionsConcurrent(t *testing.T) {
	// Writers add while readers list: run with -race. Each writer's own
	// decisions, numbered in the order it added them, must come out newest
	// first, and the ring never holds more than it keeps.
	const writers, perWriter = 4, 2000
	var d decisions
	check := func(list []inbound.Decision) {
		assert.LessOrEqual(t, len(list), _recentDecisions)
		last := map[string]int{}
		for _, dec := range list {
			if prev, ok := last[dec.Procedure]; ok {
				assert.Less(t, dec.FailedCalls, prev, "writer %s: newest first", dec.Procedure)
			}
			last[dec.Procedure] = dec.FailedCalls
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := strconv.Itoa(w)
			for i := 1; i <= perWriter; i++ {
				d.add(record{procedure: name, failedCalls: i}, procedureHash(name))
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			check(d.list())
		}
	}()
	wg.Wait()
	<-done
	list := d.list()
	check(list)
	assert.Len(t, list, _recentDecisions, "every place written")
	assert.Equal(t, uint64(writers*perWriter), d.r.next.Load())
}

func TestDecisionsWhileHandling(t *testing.T) {
	// The middleware's own path: failing requests in parallel with the
	// debug page's reads.
	e := newEnv(t, inbound.Config{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				_ = e.mw.Handle(context.Background(), request("http"), &transporttest.FakeResponseWriter{}, handlerLogging(errBoom, failed("hard", false)))
				if i%10 == 0 {
					_ = e.mw.Decisions()
				}
			}
		}()
	}
	wg.Wait()
	list := e.mw.Decisions()
	require.Len(t, list, _recentDecisions)
	for _, dec := range list {
		assert.Equal(t, "unavailable", dec.Code)
		assert.Equal(t, 1, dec.FailedCalls)
	}
	assert.Equal(t, int64(1200), e.counter("inbound.claimed"))
}

func TestDecisionsCursorInABlockOfItsOwn(t *testing.T) {
	var d decisions
	assert.Equal(t, uintptr(_cacheLine), unsafe.Offsetof(d.r.slots), "the cursor in a block of its own")
}

// A signature changes with any word, with the words' order and with the
// procedure, and only then: ring.addNew lists a repeat once and anything
// else again.
func TestSignatureTellsValuesApart(t *testing.T) {
	ph := procedureHash("checkout")
	base := signatureWords{1_700_000_000_000_000_000, 3, 9, 0, 1, 7}
	want := signature(ph, base)
	assert.Equal(t, want, signature(procedureHash("checkout"), base), "the same value")
	assert.NotEqual(t, want, signature(procedureHash("browse"), base), "another procedure")
	seen := map[uint64]string{want: "base"}
	for i := range base {
		for _, d := range []uint64{1, 1 << 32, 1 << 63} {
			w := base
			w[i] += d
			sig := signature(ph, w)
			_, dup := seen[sig]
			require.False(t, dup, "word %d + %d collides with %s", i, d, seen[sig])
			seen[sig] = "word " + strconv.Itoa(i)
		}
	}
	swapped := base
	swapped[1], swapped[2] = swapped[2], swapped[1]
	assert.NotEqual(t, want, signature(ph, swapped), "words in another order")

	st := inbound.Storm{Time: time.Unix(1_700_000_000, 0), Procedure: "checkout", Known: true, Failed: true, Served: 9, Blind: 18, Prevented: 9, Retries: 1, Radius: 1, BlindRadius: 2}
	for name, change := range map[string]func(*inbound.Storm){
		"known":        func(s *inbound.Storm) { s.Known = false },
		"failed":       func(s *inbound.Storm) { s.Failed = false },
		"radius":       func(s *inbound.Storm) { s.Radius = 2 },
		"blind radius": func(s *inbound.Storm) { s.BlindRadius = 3 },
		"time":         func(s *inbound.Storm) { s.Time = s.Time.Add(time.Nanosecond) },
		"served":       func(s *inbound.Storm) { s.Served = 10 },
	} {
		other := st
		change(&other)
		assert.NotEqual(t, stormSignature(&st, ph), stormSignature(&other, ph), name)
	}
}
