package retry

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestModeOverrideString(t *testing.T) {
	assert.Equal(t, "users::get=observe", ModeOverride{Service: "users", Procedure: "get", Mode: ModeObserve}.String())
	assert.Equal(t, "billing=enforce", ModeOverride{Service: "billing", Mode: ModeEnforce}.String())
}
