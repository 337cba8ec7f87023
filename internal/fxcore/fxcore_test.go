package fxcore

import (
	"errors"
	"testing"

	"github.com/errown/errown"
	"go.uber.org/fx"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errNoCore = errors.New("no core")

func TestRequire(t *testing.T) {
	if err := fx.New(fx.NopLogger, Require(errNoCore)).Err(); !errors.Is(err, errNoCore) {
		t.Errorf("without a Middleware: %v, want %v", err, errNoCore)
	}
	if err := fx.New(fx.NopLogger, errown.Core, Require(errNoCore)).Err(); err != nil {
		t.Errorf("with errown.Core: %v, want none", err)
	}
}
