package errown

import (
	"errors"
	"fmt"

	"github.com/errown/errown/internal/depcontract"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
	"go.uber.org/zap"
)

// via is the way an application added errown: each has its own wiring,
// and its own fix when the wiring is missing.
type via int

const (
	_viaCore    via = iota // Core: an adapter, or Apply, takes the middleware
	_viaModule             // Module: the yarpc.Config decoration
	_viaGrouped            // Grouped: the middleware groups
)

// wiringParams are the inputs of checkWiring.
type wiringParams struct {
	fx.In

	Lifecycle  fx.Lifecycle
	Middleware *Middleware
	Logger     *zap.Logger       `optional:"true"`
	Dispatcher *yarpc.Dispatcher `optional:"true"`
}

// ErrNotWired is the start error of an application in which errown's
// middleware reached no yarpc dispatcher, and no grpc-go or net/http
// server or client took it either (through grpcgo or nethttp). Its
// message names the one fix for the wiring errown found.
var ErrNotWired = errors.New("errown: its middleware reached no dispatcher, server or client")

// ErrNoMetrics is the start error, under wiring: strict, of an
// application that gives errown no metrics scope: neither a tally v4
// Scope (github.com/uber-go/tally/v4) nor the tally v3 Scope
// (github.com/uber-go/tally) yarpc takes its metrics from, in the fx
// graph or (Module) in the yarpc.Config errown decorates.
var ErrNoMetrics = errors.New("errown: metrics: none provided, and wiring is strict: " +
	"provide a tally v4 Scope or yarpc's tally v3 Scope to fx, or set the yarpc.Config's Metrics.Tally")

// _orWarn ends every start error the wiring setting can soften.
const _orWarn = "; set errown.wiring: warn to start anyway"

// checkWiring returns the fx invoke of an application that added errown
// by way v: at start, it fails (or, with wiring: warn, logs) when errown's
// middleware reached no dispatcher nor adapter, or when the configuration
// names services the dispatcher does not call, and logs what errown runs
// with.
func checkWiring(v via) func(wiringParams) {
	return func(p wiringParams) {
		m := p.Middleware
		logger := p.Logger
		if logger == nil {
			logger = zap.NewNop()
		}
		// soften returns err, or under wiring: warn logs it with msg.
		soften := func(err error, msg string) error {
			if err == nil || m.wiring != WiringWarn {
				return err
			}
			logger.Warn(msg, zap.Error(err))
			return nil
		}
		p.Lifecycle.Append(fx.StartHook(func() error {
			if err := m.wiringError(v, p.Dispatcher); err != nil {
				msg := "errown is off"
				if errors.Is(err, depcontract.ErrMoved) {
					msg = "errown cannot check that its middleware is on the dispatcher"
				}
				if err := soften(err, msg); err != nil {
					return err
				}
			} else if err := soften(m.unknownServices(p.Dispatcher), "errown: configuration names services the dispatcher does not call"); err != nil {
				return err
			}
			if err := soften(m.unsteeredPolicies(), "errown: retries may go back to the instance that failed them"); err != nil {
				return err
			}
			if m.wiring == WiringStrict && m.metricsSummary() == _metricsNone {
				return ErrNoMetrics
			}
			logger.Info("errown started", m.summary()...)
			return nil
		}))
	}
}

// wiringError says why errown's middleware, added by way v, is not on d
// (nil: not known), or on no dispatcher nor adapter at all; nil when it
// is. Each message names the one fix for what was found.
func (m *Middleware) wiringError(v via, d *yarpc.Dispatcher) error {
	applied := m.applied.Load()
	var onDispatcher bool
	if d != nil {
		var err error
		if onDispatcher, err = depcontract.UnaryChainHas(d.InboundMiddleware().Unary, m.inbound); err != nil {
			return fmt.Errorf("%w (the dispatcher %q)%s", err, d.Name(), _orWarn)
		}
	}
	var msg string
	switch {
	case applied && (d == nil || onDispatcher):
		return nil
	case v == _viaModule && !applied && d != nil:
		msg = fmt.Sprintf("the dispatcher %q was not built from the yarpc.Config errown.Module decorates: "+
			"place errown.Module where the dispatcher is built from yarpc.Config, not in a child fx.Module", d.Name())
	case v == _viaModule && !applied:
		msg = "nothing read the yarpc.Config errown.Module decorates: " +
			"build the dispatcher from the provided yarpc.Config, in the fx scope errown.Module is placed in"
	case v == _viaModule:
		msg = fmt.Sprintf("the dispatcher %q was not built from the yarpc.Config errown decorated: "+
			"pass the provided yarpc.Config to yarpc.NewDispatcher as it is", d.Name())
	case v == _viaGrouped && !applied:
		msg = "nothing consumed errown.Grouped's middleware groups: chain them into the dispatcher's yarpc.Config " +
			"with errown.ChainInbound and errown.ChainOutbound (see errown.Grouped)"
	case v == _viaGrouped:
		msg = fmt.Sprintf("the dispatcher %q took errown's middleware groups but does not run them: "+
			"put errown.ChainInbound and errown.ChainOutbound of the groups into the yarpc.Config it is built from", d.Name())
	case d != nil:
		msg = fmt.Sprintf("errown.Core decorates nothing, and the dispatcher %q does not carry errown's middleware: "+
			"use errown.Module (or errown.Grouped) instead of errown.Core", d.Name())
	default:
		msg = "no grpc-go or net/http server or client took errown's middleware: " +
			"build them from what grpcgo.Module or nethttp.Module provide, when they are constructed"
	}
	return fmt.Errorf("%w: %s%s", ErrNotWired, msg, _orWarn)
}
