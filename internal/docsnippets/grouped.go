package docsnippets

import (
	"github.com/errown/errown"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
)

// docs/configuration.md, "Beside other middleware libraries".

type dispatcherParams struct {
	fx.In

	Config   yarpc.Config
	Inbound  []middleware.UnaryInbound  `group:"yarpc.unary_inbound"`
	Outbound []middleware.UnaryOutbound `group:"yarpc.unary_outbound"`
}

func newDispatcher(p dispatcherParams, lc fx.Lifecycle) *yarpc.Dispatcher {
	cfg := p.Config
	cfg.InboundMiddleware.Unary = errown.ChainInbound(p.Inbound, cfg.InboundMiddleware.Unary)
	cfg.OutboundMiddleware.Unary = errown.ChainOutbound(p.Outbound, cfg.OutboundMiddleware.Unary)
	d := yarpc.NewDispatcher(cfg)
	lc.Append(fx.StartStopHook(d.Start, d.Stop))
	return d
}

var _ = fx.Provide(newDispatcher)
