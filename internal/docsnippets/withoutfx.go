package docsnippets

import (
	"github.com/errown/errown"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/zap"
)

// withoutFx is docs/configuration.md's errown without fx.
func withoutFx(cfg errown.Config, logger *zap.Logger, scope tally.Scope) error {
	mw, err := errown.New(cfg, errown.WithLogger(logger), errown.WithScope(scope))
	if err != nil {
		return err
	}
	// Start loads the dependency memory's snapshot and starts its snapshot and
	// fleet loops; Stop ends them and writes a last snapshot. Module does both.
	if err := mw.Start(); err != nil {
		return err
	}
	defer mw.Stop()
	d := yarpc.NewDispatcher(mw.Apply(yarpc.Config{Name: "checkout" /* ... */}))
	_ = d
	return nil
}

var _ = withoutFx
