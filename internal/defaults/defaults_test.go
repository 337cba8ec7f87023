package defaults

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The root package's TestDefaultsAsDocumented checks each default
// against the value its Config field's doc states.

type registered struct{ n int }

type unregistered struct{}

func TestApply(t *testing.T) {
	t.Cleanup(func() { delete(appliers, any((*registered)(nil))) }) // for -count > 1
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
