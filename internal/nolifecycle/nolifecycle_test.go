package nolifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOutbound(t *testing.T) {
	var o Outbound
	assert.NoError(t, o.Start(), "Start")
	assert.True(t, o.IsRunning(), "IsRunning")
	assert.NoError(t, o.Stop(), "Stop")
	assert.True(t, o.IsRunning(), "IsRunning after Stop")
	assert.Nil(t, o.Transports(), "Transports")
}
