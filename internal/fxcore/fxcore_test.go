package fxcore

import (
	"errors"
	"testing"

	"github.com/errown/errown"
	"github.com/stretchr/testify/assert"
	"go.uber.org/fx"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errNoCore = errors.New("no core")

func TestRequire(t *testing.T) {
	assert.ErrorIs(t, fx.New(fx.NopLogger, Require(errNoCore)).Err(), errNoCore, "without a Middleware")
	assert.NoError(t, fx.New(fx.NopLogger, errown.Core, Require(errNoCore)).Err(), "with errown.Core, want none")
}
