package adapt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNoLifecycle(t *testing.T) {
	var o NoLifecycle
	assert.NoError(t, o.Start(), "Start")
	assert.True(t, o.IsRunning(), "IsRunning")
	assert.NoError(t, o.Stop(), "Stop")
	assert.True(t, o.IsRunning(), "IsRunning after Stop")
	assert.Nil(t, o.Transports(), "Transports")
}
