package reqlog

import (
	"context"
	"testing"

	"github.com/errown/errown/internal/wire"
	"github.com/stretchr/testify/assert"
)

func TestCallStateContext(t *testing.T) {
	assert.Nil(t, CallStateFromContext(context.Background()))
	s := &CallState{}
	ctx := WithCallState(context.Background(), s)
	got := CallStateFromContext(ctx)
	got.Attempts = 2
	got.Refused = wire.RefusedBudget
	assert.Equal(t, &CallState{Attempts: 2, Refused: wire.RefusedBudget, mu: s.mu}, s)
	assert.NotNil(t, s.mu, "a state handed below has its mutex")
}

type otherKey struct{}

func TestNewCallContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	ctx, s := NewCallContext(parent)

	assert.Same(t, s, CallStateFromContext(ctx))
	assert.Equal(t, &CallState{mu: s.mu}, s, "fresh")
	assert.NotNil(t, s.mu, "a state handed below has its mutex")
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
