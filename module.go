package errown

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/errown/errown/internal/configkey"
	"github.com/errown/errown/internal/retrier"
	internaltallyv3 "github.com/errown/errown/internal/tallyv3"
	tallyv3 "github.com/uber-go/tally"
	"github.com/uber-go/tally/v4"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/zap"
	"gopkg.in/yaml.v2"
)

// Core is errown without yarpc: it provides *Middleware, in an fx.Module
// named "errown", configured from the application's config.Provider (or
// *config.YAML) under the key "errown" when there is one, logging to its
// *zap.Logger and sending metrics to its tally.Scope when it has them (a
// tally v4 Scope, or else the tally v3 Scope yarpc takes its metrics
// from; the start line's "metrics" names the one used), and started and
// stopped with the application. Start fails with ErrNotWired when
// nothing took its middleware (wiring: warn logs it instead).
//
// Core is Module without the yarpc.Config decoration: an application
// serving grpc-go or net/http places it once beside grpcgo.Module and
// nethttp.Module, which provide only their adapters, built on Core's
// *Middleware.
var Core = fx.Module("errown",
	fx.Invoke(checkConfig),
	fx.Provide(newFromParams),
	fx.Invoke(checkWiring(_viaCore)),
)

// Module adds errown to an fx application that builds its yarpc dispatcher
// from a provided yarpc.Config: it provides *Middleware as Core does, and
// decorates the yarpc.Config with it. Without a tally Scope in the graph,
// metrics go to the tally v3 Scope of the yarpc.Config (Metrics.Tally),
// when that has one.
//
// fx scopes a module's decorations to that module, so the decoration sits
// beside the "errown" fx.Module and applies in the scope Module is placed
// in: place it where the dispatcher is built from the yarpc.Config. Start
// fails with the fix when errown's middleware reached no dispatcher, and,
// when the graph has the *yarpc.Dispatcher, when a retry policy or
// dependency declaration names a service the dispatcher has no outbound
// for (ErrUnknownService); wiring: warn logs them instead.
//
// fx allows one decoration of a type per scope: where another library
// decorates yarpc.Config too, use Grouped.
var Module = fx.Options(
	fx.Module("errown",
		fx.Invoke(checkConfig),
		fx.Provide(newDecorating),
		fx.Invoke(checkWiring(_viaModule)),
	),
	fx.Decorate(decorate),
)

// Grouped adds errown to an fx application without decorating anything:
// it provides *Middleware, in an fx.Module named "errown", and contributes
// errown's unary inbound and outbound middleware to the value groups
// "yarpc.unary_inbound" and "yarpc.unary_outbound", which the
// application's dispatcher constructor consumes (with the middleware
// other libraries add to the same groups) and chains into its
// yarpc.Config with ChainInbound and ChainOutbound, as ExampleGrouped
// shows.
//
// It composes with other libraries that decorate yarpc.Config or
// contribute to the same groups. Start fails as with Module.
var Grouped = fx.Module("errown",
	fx.Invoke(checkConfig),
	fx.Provide(newFromParams, groupedMiddleware),
	fx.Invoke(checkWiring(_viaGrouped)),
)

// configParams are where errown's configuration comes from: Files, when
// the application provides them, name the files merged into the provider,
// which errors then name.
type configParams struct {
	fx.In

	Config config.Provider `optional:"true"`
	YAML   *config.YAML    `optional:"true"`
	Files  ConfigFiles     `optional:"true"`
}

// params are the inputs of newFromParams.
type params struct {
	fx.In

	Sources   configParams
	Lifecycle fx.Lifecycle
	Logger    *zap.Logger `optional:"true"`
	Scope     tally.Scope `optional:"true"`
	// ScopeV3 is read when the application provides no tally v4 Scope.
	ScopeV3 tallyv3.Scope `optional:"true"`
}

// checkConfig is the first fx invoke of each of errown's modules, so that
// a configuration error leads the application's error rather than come
// behind fx's account of every constructor it could not call.
func checkConfig(p configParams) error {
	_, _, err := p.read()
	return err
}

// read reads and validates errown's Config from p, and says where it
// came from, for the start log.
func (p configParams) read() (Config, string, error) {
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
	cfg, found, err := configFromProvider(provider, p.Files)
	if err != nil {
		return Config{}, "", err
	}
	if provider != nil && !found {
		source += " " + _noSection
	}
	return cfg, source, nil
}

// result is the output of newFromParams.
type result struct {
	fx.Out

	Middleware *Middleware
}

// newFromParams reads the "errown" section of p.Config (or p.YAML) and
// builds the middleware, whose background work starts and stops with
// p.Lifecycle. It is what Core and Grouped provide.
func newFromParams(p params) (result, error) { return build(p, false) }

// newDecorating is newFromParams for Module, which decorates the
// yarpc.Config: given no scope, errown reports to the tally v3 Scope of
// the yarpc.Config, if it has one, once decorate has read it.
func newDecorating(p params) (result, error) { return build(p, true) }

func build(p params, decorates bool) (result, error) {
	cfg, source, err := p.Sources.read()
	if err != nil {
		return result{}, err
	}
	var (
		scope   = p.Scope
		metrics = _metricsV4
		late    *internaltallyv3.Late
	)
	switch {
	case p.Scope != nil:
	case p.ScopeV3 != nil:
		scope, metrics = internaltallyv3.Scope(p.ScopeV3), _metricsV3
	case decorates:
		late = internaltallyv3.NewLate()
		scope, metrics = late, _metricsNone
	default:
		metrics = _metricsNone
	}
	m, err := New(cfg, WithLogger(p.Logger), WithScope(scope))
	if err != nil {
		return result{}, fmt.Errorf("errown: config: %w", err)
	}
	m.source, m.metrics, m.late = source, metrics, late
	p.Lifecycle.Append(fx.StartStopHook(m.Start, m.Stop))
	return result{Middleware: m}, nil
}

// What the start log says of the configuration when there is none.
const (
	// _sourceNone: errown found no configuration provider.
	_sourceNone = "none found: defaults, no retry policies"
	// _noSection: the provider has no errown key.
	_noSection = "(no errown key: defaults, no retry policies)"
)

// What the start log says of the metrics scope errown reports to.
const (
	_metricsV4 = "tally v4 Scope"
	_metricsV3 = "yarpc's tally v3 Scope (github.com/uber-go/tally)"
	// _metricsV3Config: the tally v3 Scope of the yarpc.Config Module
	// decorated.
	_metricsV3Config = _metricsV3 + ", from the yarpc.Config"
	_metricsNone     = "none provided"
)

// configFromProvider reads the errown section strictly, whatever the
// provider's own mode, and says whether p has the errown key. A top-level
// key close to errown is an error (nearMissKeys).
func configFromProvider(p config.Provider, files ConfigFiles) (cfg Config, found bool, err error) {
	if p == nil {
		cfg, err = ConfigFromYAML(nil)
		return cfg, false, err
	}
	var raw interface{}
	if err := p.Get(_configKey).Populate(&raw); err != nil {
		return Config{}, true, fmt.Errorf("errown: config: %w", err)
	}
	var top map[string]interface{}
	if err := p.Get(config.Root).Populate(&top); err == nil {
		_, found = top[_configKey]
	} else {
		// No top-level mapping to look at: only a value says the key
		// is there.
		found = raw != nil
	}
	if err := nearMissKeys(top, found, files); err != nil {
		return Config{}, found, err
	}
	if raw == nil {
		cfg, err = ConfigFromYAML(nil)
		return cfg, found, err
	}
	b, err := yaml.Marshal(raw)
	if err != nil {
		return Config{}, true, fmt.Errorf("errown: config: %w", err)
	}
	cfg, err = ConfigFromYAML(b)
	if err != nil && len(files) > 0 {
		err = files.annotate(err)
	}
	return cfg, true, err
}

// nearMissKeys reports each top-level key of top that is errown
// misspelled: any key close to errown when there is no errown key (found
// false), and beside one a key close to it that holds errown's own keys
// (an override file's typo). It names the files of files that hold each.
func nearMissKeys(top map[string]interface{}, found bool, files ConfigFiles) error {
	keys := make([]string, 0, len(top))
	for k, v := range top {
		if k != _configKey && configkey.Similar(k, _configKey) && (!found || len(errownKeys(v)) > 0) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	in, err := files.holding(keys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !found {
			err = multierr.Append(err, fmt.Errorf("errown: config: found top-level key %q%s, did you mean %s? "+
				"errown reads only %q and would start with defaults and no retry policies: "+
				"rename %q to %s (or, if it is not errown's, add %s: {} beside it)",
				k, in[k], _configKey, _configKey, k, _configKey, _configKey))
			continue
		}
		err = multierr.Append(err, fmt.Errorf("errown: config: found top-level key %q%s beside %s, did you mean %s? "+
			"it holds errown's keys (%s), which errown would ignore: move them under %s",
			k, in[k], _configKey, _configKey, strings.Join(errownKeys(top[k]), ", "), _configKey))
	}
	return err
}

// errownKeys returns the keys of the mapping v that are keys of Config,
// sorted; none when v is not a mapping.
func errownKeys(v interface{}) []string {
	m, ok := v.(map[interface{}]interface{})
	if !ok {
		return nil
	}
	fields := yamlFields(reflect.TypeOf(Config{}))
	var keys []string
	for k := range m {
		if _, ok := fields[fmt.Sprint(k)]; ok {
			keys = append(keys, fmt.Sprint(k))
		}
	}
	sort.Strings(keys)
	return keys
}

func decorate(cfg yarpc.Config, m *Middleware) yarpc.Config {
	m.applied.Store(true)
	if m.late != nil && cfg.Metrics.Tally != nil {
		// errown's instruments, built with the middleware before the
		// yarpc.Config was read, report to its scope from now on.
		m.late.Bind(internaltallyv3.Scope(cfg.Metrics.Tally))
	}
	return m.Apply(cfg)
}

// groupedResult is what Grouped contributes to the middleware groups.
type groupedResult struct {
	fx.Out

	Inbound  middleware.UnaryInbound  `group:"yarpc.unary_inbound"`
	Outbound middleware.UnaryOutbound `group:"yarpc.unary_outbound"`
	// Attempts is errown's innermost attempt step, which ChainOutbound
	// puts last, below every other outbound middleware.
	Attempts middleware.UnaryOutbound `group:"yarpc.unary_outbound"`
}

func groupedMiddleware(m *Middleware) groupedResult {
	m.applied.Store(true)
	return groupedResult{Inbound: m.inbound, Outbound: m.egress, Attempts: m.retry.Attempts()}
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
		if _, ok := mw.(*retrier.Attempts); ok {
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
