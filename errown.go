package errown

import (
	"sync"
	"sync/atomic"

	"cmp"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/adapt"
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/egress"
	"github.com/errown/errown/internal/ingress"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/internal/tallyv3"
	"github.com/uber-go/tally/v4"
	"go.uber.org/config"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/zap"
)

// Option configures New.
type Option interface {
	apply(*options)
}

type options struct {
	obs.Sinks
	stormHook func(inbound.Storm)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithLogger logs to l. Default zap.NewNop().
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(o *options) { o.SetLogger(l) })
}

// WithScope sends metrics to a sub-scope "errown" of s. Default
// tally.NoopScope.
func WithScope(s tally.Scope) Option {
	return optionFunc(func(o *options) { o.SetScope(s) })
}

// WithStormHook calls f with every root request (one whose caller runs no
// errown) that met a storm below: a retry spent or suppressed, or figures
// unknown. f runs on the request's goroutine, so it must be quick and safe
// for concurrent use. The storm metrics and Storms report the same
// requests; the hook is for a test or a lab that wants each one. Default:
// nobody.
func WithStormHook(f func(inbound.Storm)) Option {
	return optionFunc(func(o *options) { o.stormHook = f })
}

// Middleware is errown's set of yarpc middleware for one dispatcher.
type Middleware struct {
	inbound *ingress.Middleware
	egress  *egress.Middleware
	direct  *egress.Direct // egress with the innermost step right below it
	retry   *retrier.Middleware
	memory  *memory.Memory
	kinds   *memory.Static
	gauges  *gauges
	cfg     Config

	// applied is set once the middleware went into a yarpc.Config, a
	// middleware group or an adapter, adapted once an adapter took it (its
	// clients' callees are not the dispatcher's): checkWiring reads them.
	applied atomic.Bool
	adapted atomic.Bool
	// unsteered are the outbounds Apply found whose retries cannot go to
	// another instance (unsteeredPolicies).
	unsteered atomic.Pointer[[]unsteered]
	wiring    string
	source    string // where the configuration came from, for the start log
	metrics   string // the scope errown reports to, for the start log
	// late, when set, is bound to the tally v3 Scope of the yarpc.Config
	// Module decorates (decorate).
	late *tallyv3.Late

	lifeMu  sync.Mutex
	running bool
}

// New builds errown's middleware from cfg. Use it when building a yarpc
// dispatcher by hand: pass the yarpc.Config through Apply.
func New(cfg Config, opts ...Option) (*Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{Sinks: obs.Defaults()}
	for _, opt := range opts {
		opt.apply(&o)
	}
	scope := o.Scope.SubScope("errown")
	sinks := obs.Sinks{Logger: o.Logger, Scope: scope}
	mem, err := memory.NewMemory(cfg.Memory, memory.WithSinks(sinks))
	if err != nil {
		return nil, err
	}
	kinds, err := memory.NewStatic(cfg.Dependencies, mem)
	if err != nil {
		return nil, err
	}
	inCfg, outCfg, retryCfg := cfg.sections()
	orphans := new(calls.Orphans)
	in, err := ingress.New(inCfg,
		ingress.WithOrphans(orphans),
		ingress.WithSinks(sinks),
		ingress.WithLearner(kinds),
		ingress.WithStormHook(o.stormHook),
		ingress.WithClock(mem.Now))
	if err != nil {
		return nil, err
	}
	r, err := retrier.New(retryCfg, retrier.WithSinks(sinks))
	if err != nil {
		return nil, err
	}
	egress, err := egress.New(outCfg, egress.WithSinks(sinks), egress.WithInner(r), egress.WithOrphans(orphans), egress.WithClock(mem.Now))
	if err != nil {
		return nil, err
	}
	metrics := _metricsNone
	if o.Scope != tally.NoopScope {
		metrics = _metricsV4
	}
	m := &Middleware{inbound: in, egress: egress, retry: r, memory: mem, kinds: kinds, cfg: cfg, wiring: cmp.Or(cfg.Wiring, DefaultConfig().Wiring), source: "errown.New", metrics: metrics}
	m.direct = egress.Direct(r.Attempts())
	m.gauges = newGauges(m, scope)
	return m, nil
}

// Start loads the dependency memory's snapshot and starts the background
// work: snapshots, fleet queries, the gauges (updated every second) and
// the retry budgets' clock. Module calls it on fx start; a hand-built
// dispatcher's owner calls it before serving.
func (m *Middleware) Start() error {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	if err := m.retry.Start(); err != nil {
		return err
	}
	if err := m.memory.Start(); err != nil {
		return multierr.Append(err, m.retry.Stop())
	}
	m.gauges.start(_gaugeInterval)
	m.running = true
	return nil
}

// Stop ends the background work Start began and writes a last snapshot.
func (m *Middleware) Stop() error {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	if !m.running {
		return nil
	}
	m.running = false
	m.gauges.halt()
	return multierr.Append(m.memory.Stop(), m.retry.Stop())
}

// Inbound returns the inbound middleware to put on a dispatcher.
func (m *Middleware) Inbound() yarpc.InboundMiddleware {
	return yarpc.InboundMiddleware{Unary: m.inbound}
}

// Outbound returns the outbound middleware to put on a dispatcher that has
// no outbound middleware of its own: egress logging around retries, then
// the innermost attempt step. A dispatcher with outbound middleware of its
// own takes Apply, which puts it in between.
func (m *Middleware) Outbound() yarpc.OutboundMiddleware {
	return m.outboundAround(nil)
}

// outboundAround returns errown's outbound middleware around own, the
// dispatcher's (nil for none): egress and retry outside it, so every
// attempt passes through own, and the innermost attempt step inside it,
// so a retry own makes is held to errown's rules.
func (m *Middleware) outboundAround(own middleware.UnaryOutbound) yarpc.OutboundMiddleware {
	if own == nil {
		// Nothing in between: the egress middleware sends through the
		// innermost step itself, with no chain and no context node.
		return yarpc.OutboundMiddleware{Unary: m.direct}
	}
	return yarpc.OutboundMiddleware{Unary: yarpc.UnaryOutboundMiddleware(m.egress, own, m.retry.Attempts())}
}

// init gives errown's adapters (grpcgo, nethttp) the parts of a
// Middleware they run, through package adapt: they are not API.
func init() {
	adapt.PartsOf = func(mw any) adapt.Parts {
		m := mw.(*Middleware)
		m.applied.Store(true)
		m.adapted.Store(true)
		return adapt.Parts{Inbound: m.inbound, Outbound: m.egress, Headers: m.cfg.Headers}
	}
	adapt.AttemptsOf = func(mw any) middleware.UnaryOutbound {
		m := mw.(*Middleware)
		m.applied.Store(true)
		return m.retry.AdapterAttempts()
	}
	adapt.CheckConfig = func(p config.Provider, y *config.YAML, files any) error {
		f, _ := files.(ConfigFiles)
		return checkConfig(configParams{Config: p, YAML: y, Files: f})
	}
}

// Apply returns cfg with errown's middleware added. The inbound middleware
// goes outside cfg's unary inbound middleware, so it sees the error the
// caller will see. errown's egress and retry middleware go outside cfg's
// unary outbound middleware, so that each attempt passes through it, and
// errown's innermost attempt step inside it, so that a retry it makes is
// held to errown's rules. Oneway and stream middleware are untouched.
func (m *Middleware) Apply(cfg yarpc.Config) yarpc.Config {
	m.applied.Store(true)
	found := unsteeredOutbounds(cfg)
	m.unsteered.Store(&found)
	cfg.InboundMiddleware.Unary = yarpc.UnaryInboundMiddleware(m.inbound, cfg.InboundMiddleware.Unary)
	cfg.OutboundMiddleware.Unary = m.outboundAround(cfg.OutboundMiddleware.Unary).Unary
	return cfg
}

// isErrown reports whether mw is one of errown's own middleware.
func isErrown(mw any) bool {
	switch mw.(type) {
	case *ingress.Middleware, *egress.Middleware, *egress.Direct, *retrier.Attempts:
		return true
	default:
		return false
	}
}

// summary is what errown runs with, as log fields.
func (m *Middleware) summary() []zap.Field {
	c := m.cfg
	policies := make([]string, 0, len(c.Retry.Policies))
	for _, p := range c.Retry.Policies {
		name := p.Service
		if p.Procedure != "" {
			name += "::" + p.Procedure
		}
		policies = append(policies, name)
	}
	snapshot, fleet := "none", "none"
	if c.Memory.Snapshot.Path != "" {
		snapshot = c.Memory.Snapshot.Path
	}
	if c.Memory.Fleet.URL != "" {
		fleet = c.Memory.Fleet.URL
	}
	memory := "learned"
	if c.Memory.Disabled {
		memory = "disabled"
	}
	modes := m.modes()
	overrides := make([]string, len(modes.Overrides))
	for i, o := range modes.Overrides {
		overrides[i] = o.String()
	}
	return []zap.Field{
		zap.String("mode", string(modes.Mode)),
		zap.Strings("modeOverrides", overrides),
		zap.String("config", m.source),
		zap.String("metrics", m.metricsSummary()),
		zap.Strings("retryPolicies", policies),
		zap.Int("declaredDependencies", len(c.Dependencies)),
		zap.String("memory", memory),
		zap.String("snapshot", snapshot),
		zap.String("fleet", fleet),
		zap.String("wiring", m.wiring),
	}
}

// metricsSummary names the scope errown reports to, for the start log.
func (m *Middleware) metricsSummary() string {
	if m.late != nil && m.late.Bound() {
		return _metricsV3Config
	}
	return m.metrics
}
