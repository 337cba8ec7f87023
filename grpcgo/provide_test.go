package grpcgo

import (
	"testing"

	"github.com/errown/errown/internal/fxcore"
	"github.com/stretchr/testify/assert"
)

// Without the application's Middleware, Module's constructors say what is
// missing rather than hand out an adapter that would panic on its first
// request.
func TestConstructorsWithoutMiddleware(t *testing.T) {
	_, err := provideServerOptions(fxcore.Params{})
	assert.ErrorIs(t, err, ErrNoCore, "provideServerOptions")
	_, err = provideDialer(fxcore.Params{})
	assert.ErrorIs(t, err, ErrNoCore, "provideDialer")
}
