package configkey

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/multierr"
)

func TestUnder(t *testing.T) {
	assert.NoError(t, Under("retry", nil))
	a, b := errors.New("window: must be > 0"), errors.New("shards: too many")
	err := Under("memory", multierr.Combine(a, b))
	assert.EqualError(t, err, "memory.window: must be > 0; memory.shards: too many")
	assert.ErrorIs(t, err, a, "each error stays wrapped")
	assert.ErrorIs(t, err, b)
}
