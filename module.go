package errown

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/zap"
	"gopkg.in/yaml.v2"
)

// Core is errown without yarpc: it provides *Middleware, in an fx.Module
// named "errown", configured from the application's config.Provider (or
// *config.YAML) under the key "errown" when there is one, logging to its
// *zap.Logger and sending metrics to its tally.Scope when it has them, and
// started and stopped with the application. When the application starts,
// errown checks that something took its middleware, and fails start with
// ErrNotWired when nothing did (wiring: warn logs it instead).
//
// Core is what Module, grpcgo.Module and nethttp.Module have in common;
// on its own it suits an application that hands *Middleware to an adapter
// itself, such as one serving both grpc-go and net/http (one Core per
// application: fx refuses two providers of *Middleware).
var Core = fx.Module("errown",
	fx.Provide(NewFromParams),
	fx.Invoke(checkWiring),
)

// Module adds errown to an fx application that builds its yarpc dispatcher
// from a provided yarpc.Config: it is Core, which provides *Middleware in
// an fx.Module named "errown", and decorates the yarpc.Config with it. The
// configuration comes from the application's config.Provider (or
// *config.YAML) under the key "errown" when there is one; logs go to its
// *zap.Logger and metrics to its tally.Scope when it has them.
//
// The decoration sits beside the "errown" fx.Module rather than in it:
// fx scopes a module's decorations to that module, and the dispatcher is
// built outside it. It applies in the scope Module is placed in, so place
// Module where the dispatcher is built from the yarpc.Config. When the app
// starts, errown checks that its middleware reached a dispatcher, and
// fails start with the fix when it did not (wiring: warn logs it instead).
//
// An application in which another library decorates yarpc.Config too
// cannot use Module (fx allows one decoration of a type per scope): use
// Grouped.
var Module = fx.Options(
	Core,
	fx.Decorate(decorate),
)

// Value groups Grouped contributes errown's middleware to. A dispatcher
// constructor consumes them (with the middleware other libraries add to
// the same groups) and chains them with ChainInbound and ChainOutbound.
const (
	InboundGroup  = "yarpc.unary_inbound"
	OutboundGroup = "yarpc.unary_outbound"
)

// Grouped adds errown to an fx application without decorating anything:
// it provides *Middleware, in an fx.Module named "errown", and contributes
// errown's unary inbound and outbound middleware to the value groups
// InboundGroup and OutboundGroup, which the application's dispatcher
// constructor consumes:
//
//	type dispatcherParams struct {
//		fx.In
//
//		Lifecycle fx.Lifecycle
//		Config    yarpc.Config
//		Inbound   []middleware.UnaryInbound  `group:"yarpc.unary_inbound"`
//		Outbound  []middleware.UnaryOutbound `group:"yarpc.unary_outbound"`
//	}
//
//	func newDispatcher(p dispatcherParams) *yarpc.Dispatcher {
//		cfg := p.Config
//		cfg.InboundMiddleware.Unary = errown.ChainInbound(p.Inbound, cfg.InboundMiddleware.Unary)
//		cfg.OutboundMiddleware.Unary = errown.ChainOutbound(p.Outbound, cfg.OutboundMiddleware.Unary)
//		d := yarpc.NewDispatcher(cfg)
//		p.Lifecycle.Append(fx.StartStopHook(d.Start, d.Stop))
//		return d
//	}
//
// (ExampleGrouped runs it.)
//
// It composes with other libraries that decorate yarpc.Config or
// contribute to the same groups. As with Module, start fails when errown's
// middleware reached no dispatcher.
var Grouped = fx.Module("errown",
	fx.Provide(NewFromParams, groupedMiddleware),
	fx.Invoke(checkWiring),
)

// Params are the inputs of NewFromParams.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle
	Config    config.Provider `optional:"true"`
	// YAML is read when the application provides the *config.YAML that
	// config.NewYAML returns rather than a config.Provider.
	YAML   *config.YAML `optional:"true"`
	Logger *zap.Logger  `optional:"true"`
	Scope  tally.Scope  `optional:"true"`
}

// Result is the output of NewFromParams.
type Result struct {
	fx.Out

	Middleware *Middleware
}

// NewFromParams reads the "errown" section of p.Config (or p.YAML) and
// builds the middleware, whose background work starts and stops with
// p.Lifecycle. It is what Core (so Module) and Grouped provide.
func NewFromParams(p Params) (Result, error) {
	var (
		provider config.Provider
		source   = _sourceNone
	)
	switch {
	case p.Config != nil:
		provider, source = p.Config, "config.Provider"
	case p.YAML != nil:
		provider, source = p.YAML, "*config.YAML"
	}
	cfg, err := configFromProvider(provider)
	if err != nil {
		return Result{}, err
	}
	m, err := New(cfg, WithLogger(p.Logger), WithScope(p.Scope))
	if err != nil {
		return Result{}, fmt.Errorf("errown: config: %w", err)
	}
	m.source = source
	p.Lifecycle.Append(fx.StartStopHook(m.Start, m.Stop))
	return Result{Middleware: m}, nil
}

// _sourceNone says that errown found no configuration.
const _sourceNone = "none found: defaults, no retry policies"

// configFromProvider reads the errown section strictly, whatever the
// provider's own mode: it is taken out as plain data and decoded again with
// unknown keys rejected.
func configFromProvider(p config.Provider) (Config, error) {
	if p == nil {
		return ConfigFromYAML(nil)
	}
	var raw interface{}
	if err := p.Get(ConfigKey).Populate(&raw); err != nil {
		return Config{}, fmt.Errorf("errown: config: %w", err)
	}
	if raw == nil {
		return ConfigFromYAML(nil)
	}
	b, err := yaml.Marshal(raw)
	if err != nil {
		return Config{}, fmt.Errorf("errown: config: %w", err)
	}
	return ConfigFromYAML(b)
}

func decorate(cfg yarpc.Config, m *Middleware) yarpc.Config {
	m.applied.Store(true)
	return m.Apply(cfg)
}

// GroupedResult is what Grouped contributes to the middleware groups.
type GroupedResult struct {
	fx.Out

	Inbound  middleware.UnaryInbound  `group:"yarpc.unary_inbound"`
	Outbound middleware.UnaryOutbound `group:"yarpc.unary_outbound"`
	// Attempts is errown's innermost attempt step, which ChainOutbound
	// puts last, below every other outbound middleware.
	Attempts middleware.UnaryOutbound `group:"yarpc.unary_outbound"`
}

func groupedMiddleware(m *Middleware) GroupedResult {
	m.applied.Store(true)
	return GroupedResult{Inbound: m.inbound, Outbound: m.egress, Attempts: m.retry.Attempts()}
}

// ChainInbound chains the unary inbound middleware of a group with a
// dispatcher's own (last, may be nil), errown's first whatever the group's
// order: it sees the error the caller will see.
func ChainInbound(group []middleware.UnaryInbound, own middleware.UnaryInbound) middleware.UnaryInbound {
	return yarpc.UnaryInboundMiddleware(append(errownFirst(group), own)...)
}

// ChainOutbound chains the unary outbound middleware of a group with a
// dispatcher's own (may be nil), errown's egress first whatever the
// group's order, so that every attempt of a retry passes through the
// others, and errown's innermost attempt step last, below the dispatcher's
// own, so that a retry any of them makes is held to errown's rules.
func ChainOutbound(group []middleware.UnaryOutbound, own middleware.UnaryOutbound) middleware.UnaryOutbound {
	var (
		mws       = make([]middleware.UnaryOutbound, 0, len(group)+1)
		innermost []middleware.UnaryOutbound
	)
	for _, mw := range errownFirst(group) {
		if _, ok := mw.(*retry.Attempts); ok {
			innermost = append(innermost, mw)
			continue
		}
		mws = append(mws, mw)
	}
	return yarpc.UnaryOutboundMiddleware(append(append(mws, own), innermost...)...)
}

// errownFirst returns a copy of mws with errown's own middleware moved to
// the front, the others in their order.
func errownFirst[T any](mws []T) []T {
	out := make([]T, 0, len(mws)+1)
	for _, mw := range mws {
		if isErrown(mw) {
			out = append(out, mw)
		}
	}
	for _, mw := range mws {
		if !isErrown(mw) {
			out = append(out, mw)
		}
	}
	return out
}

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
// server or client took it either (through grpcgo or nethttp).
var ErrNotWired = errors.New("errown: its middleware is on no yarpc dispatcher, nor on any grpc-go or net/http server or client")

// checkWiring makes start fail (or, with wiring: warn, log) when errown's
// middleware reached no dispatcher nor adapter, and logs what errown runs
// with.
func checkWiring(p wiringParams) {
	m := p.Middleware
	logger := p.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	p.Lifecycle.Append(fx.StartHook(func() error {
		err := m.wiringError(p.Dispatcher)
		if err != nil && m.wiring == WiringWarn {
			logger.Warn("errown is off", zap.Error(err))
			err = nil
		}
		if err != nil {
			return err
		}
		logger.Info("errown started", m.summary()...)
		return nil
	}))
}

// wiringError says why errown's middleware is not on d (nil: not known),
// or on no dispatcher nor adapter at all; nil when it is.
func (m *Middleware) wiringError(d *yarpc.Dispatcher) error {
	if !m.applied.Load() {
		return fmt.Errorf("%w: nothing used the yarpc.Config it decorates, nor its middleware groups, nor grpcgo's or nethttp's adapters. "+
			"errown.Module decorates yarpc.Config only in the fx scope it is placed in: place it where the dispatcher is built from yarpc.Config "+
			"(not inside a child fx.Module), or use errown.Grouped and chain its groups in the dispatcher constructor; "+
			"with grpcgo.Module or nethttp.Module, build the server or client from what they provide, when it is constructed; "+
			"set errown.wiring: warn to start anyway", ErrNotWired)
	}
	if d != nil && !chainHas(d.InboundMiddleware().Unary, m.inbound) {
		return fmt.Errorf("%w: the dispatcher %q was not built from the yarpc.Config errown decorated "+
			"(build it with yarpc.NewDispatcher from the provided yarpc.Config, or use errown.Grouped); "+
			"set errown.wiring: warn to start anyway", ErrNotWired, d.Name())
	}
	return nil
}

// chainHas reports whether mw is target or a yarpc chain holding it.
// yarpc's chains are flat slices of middleware (UnaryInboundMiddleware
// flattens chains of chains).
func chainHas(mw, target middleware.UnaryInbound) bool {
	if mw == nil {
		return false
	}
	if mw == target {
		return true
	}
	v := reflect.ValueOf(mw)
	if v.Kind() != reflect.Slice {
		return false
	}
	for i := range v.Len() {
		if e, ok := v.Index(i).Interface().(middleware.UnaryInbound); ok && chainHas(e, target) {
			return true
		}
	}
	return false
}
