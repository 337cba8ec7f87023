package egresslog

import (
	"context"
	"testing"

	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
)

func TestCallStateContext(t *testing.T) {
	assert.Nil(t, CallStateFromContext(context.Background()))
	s := &CallState{}
	ctx := WithCallState(context.Background(), s)
	got := CallStateFromContext(ctx)
	got.Attempts = 2
	got.Refused = ownership.RefusedBudget
	assert.Equal(t, &CallState{Attempts: 2, Refused: ownership.RefusedBudget}, s)
}
