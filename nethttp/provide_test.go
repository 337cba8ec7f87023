package nethttp

import (
	"testing"

	"github.com/errown/errown/internal/fxcore"
	"github.com/stretchr/testify/assert"
)

// Without the application's Middleware, Module's constructor says what is
// missing rather than hand out an adapter that would panic on its first
// request.
func TestConstructorWithoutMiddleware(t *testing.T) {
	_, err := provideMiddleware(fxcore.Params{})
	assert.ErrorIs(t, err, ErrNoCore, "provideMiddleware")
}
