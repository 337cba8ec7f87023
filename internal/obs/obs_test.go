package obs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/uber-go/tally/v4"
	"go.uber.org/zap"
)

func TestSinks(t *testing.T) {
	s := Defaults()
	assert.Equal(t, tally.NoopScope, s.Scope)
	assert.NotNil(t, s.Logger)

	s.SetLogger(nil)
	s.SetScope(nil)
	assert.Equal(t, tally.NoopScope, s.Scope, "nil leaves the scope")
	assert.NotNil(t, s.Logger, "nil leaves the logger")

	l := zap.NewExample()
	scope := tally.NewTestScope("", nil)
	s.SetLogger(l)
	s.SetScope(scope)
	assert.Same(t, l, s.Logger)
	assert.Equal(t, scope, s.Scope)
}
