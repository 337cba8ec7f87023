package retrier

import (
	"context"
	"testing"

	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/internal/wire"
	"github.com/stretchr/testify/assert"
)

func TestCallStateContext(t *testing.T) {
	assert.Nil(t, CallStateFromContext(context.Background()))
	s := &CallState{}
	ctx := WithCallState(context.Background(), s)
	got := CallStateFromContext(ctx)
	assert.Same(t, s, got)
	got.Attempts = 2
	got.Refused = wire.RefusedBudget
	assert.Equal(t, reqlog.Result{Attempts: 2, Refused: wire.RefusedBudget}, s.Result)
}

type otherKey struct{}

func TestNewCallContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	ctx, s := NewCallContext(parent)

	assert.Same(t, s, CallStateFromContext(ctx))
	assert.Equal(t, reqlog.Result{}, s.Result, "fresh")
	assert.Equal(t, Sends{}, s.Sends, "fresh")
	assert.False(t, s.ended, "fresh")
	assert.Equal(t, "v", ctx.Value(otherKey{}), "the parent's values")
	assert.Nil(t, CallStateFromContext(parent), "the parent carries no state")
	cancel()
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "the parent's cancellation")
	<-ctx.Done()

	inner, s2 := NewCallContext(ctx)
	assert.Same(t, s2, CallStateFromContext(inner), "the innermost state wins")
	assert.NotSame(t, s, s2)
}

var _callContextSink context.Context

func TestNewCallContextAllocs(t *testing.T) {
	parent := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		_callContextSink, _ = NewCallContext(parent)
	})
	assert.Equal(t, 1.0, allocs, "the context and its CallState in one allocation")
}

// stateSnapshot is what a CallState holds, without its mutex: what two
// calls' states compare by.
type stateSnapshot struct {
	Result        reqlog.Result
	ErrownAttempt int
	Sends         Sends
	Ended         bool
}

// snapshot returns s's, under its mutex.
func snapshot(s *CallState) stateSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return stateSnapshot{Result: s.Result, ErrownAttempt: s.ErrownAttempt, Sends: s.Sends, Ended: s.ended}
}
