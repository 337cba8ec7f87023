package grpcgo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Without the application's Middleware, Module's constructors say what is
// missing rather than hand out an adapter that would panic on its first
// request.
func TestConstructorsWithoutMiddleware(t *testing.T) {
	_, err := provideServerOptions(serverOptionsParams{})
	assert.ErrorIs(t, err, ErrNoCore, "provideServerOptions")
	_, err = provideDialer(dialerParams{})
	assert.ErrorIs(t, err, ErrNoCore, "provideDialer")
}
