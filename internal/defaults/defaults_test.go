package defaults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestValues pins each default to the value its Config field's doc
// states.
func TestValues(t *testing.T) {
	assert.Equal(t, "errown-claim", ClaimHeader)
	assert.Equal(t, "errown-attempt", AttemptHeader)
	assert.Equal(t, "errown-no-retry", NoRetryHeader)
	assert.Equal(t, "errown-code", CodeHeader)
	assert.Equal(t, "errown-storm", StormHeader)

	assert.Equal(t, 100, MaxRootProcedures)
	assert.Equal(t, 64, IngressShards)
	assert.Equal(t, 100000, IngressMaxInFlight)
	assert.Equal(t, 10*time.Second, IncidentWindow)

	assert.Equal(t, 1<<20, MaxBodyBytes)
	assert.Equal(t, 0.1, BudgetRatio)
	assert.Equal(t, 10.0, BudgetMinPerSecond)
	assert.Equal(t, 10*time.Second, BudgetWindow)
	assert.Equal(t, 2, MaxAttempts)
	assert.Equal(t, 10*time.Millisecond, InitialBackoff)
	assert.Equal(t, time.Second, MaxBackoff)
	assert.Equal(t, 5*time.Millisecond, MinRemaining)
	assert.Equal(t, 1000, OverloadMaxInFlight)
	assert.Equal(t, 1, OverloadMinInFlight)
	assert.Equal(t, 0.5, OverloadThreshold)

	assert.Equal(t, 10*time.Minute, MemoryWindow)
	assert.Equal(t, 10, MemoryBuckets)
	assert.Equal(t, 20, MinSamples)
	assert.Equal(t, 0.8, CloseThreshold)
	assert.Equal(t, 0.2, OpenThreshold)
	assert.Equal(t, 0.05, Hysteresis)
	assert.Equal(t, 1000, MaxEdges)
	assert.Equal(t, time.Minute, SnapshotInterval)
	assert.Equal(t, 30*time.Second, FleetInterval)
	assert.Equal(t, 5*time.Second, FleetTimeout)
}

type registered struct{ n int }

type unregistered struct{}

func TestApply(t *testing.T) {
	Register(func(r registered) registered {
		if r.n == 0 {
			r.n = 7
		}
		return r
	})
	assert.Equal(t, registered{n: 7}, Apply(registered{}))
	assert.Equal(t, registered{n: 3}, Apply(registered{n: 3}))
	assert.Panics(t, func() { Register(func(r registered) registered { return r }) }, "a second registration")
	assert.Panics(t, func() { Apply(unregistered{}) }, "a type nobody registered")
}
