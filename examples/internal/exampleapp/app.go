package exampleapp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/debugpage"
	"github.com/opentracing/opentracing-go"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	promreporter "github.com/uber-go/tally/v4/prometheus"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/transport"
	yhttp "go.uber.org/yarpc/transport/http"
	"go.uber.org/zap"
)

// Settings is the "service" section of an example's YAML file.
type Settings struct {
	// Name of the yarpc service.
	Name string `yaml:"name"`
	// Listen is the address of the yarpc HTTP inbound.
	Listen string `yaml:"listen"`
	// Admin is the address of the admin server: /metrics, /debug/errown,
	// /break.
	Admin string `yaml:"admin"`
	// Callees maps each service this one calls to its yarpc HTTP URL.
	Callees map[string]string `yaml:"callees"`
}

// Switch is the service's /break switch: while it is on, the handler
// fails.
type Switch struct{ on atomic.Bool }

// Broken reports whether the switch is on.
func (s *Switch) Broken() bool { return s.on.Load() }

// Set turns the switch on or off.
func (s *Switch) Set(on bool) { s.on.Store(on) }

// Addrs are the addresses the service listens on, once started.
type Addrs struct {
	yarpc *yhttp.Inbound
	admin net.Listener
}

// YARPC returns the address of the yarpc HTTP inbound.
func (a *Addrs) YARPC() string { return a.yarpc.Addr().String() }

// Admin returns the address of the admin server.
func (a *Addrs) Admin() string { return a.admin.Addr().String() }

// Register adds a service's procedures to its dispatcher. Broken reports
// the /break switch.
type Register func(d *yarpc.Dispatcher, s *Switch)

// Options returns an example service as fx options: configuration from
// provider, and register for the handlers.
func Options(provider config.Provider, register Register) fx.Option {
	return fx.Options(
		fx.Supply(fx.Annotate(provider, fx.As(new(config.Provider)))),
		fx.Provide(
			newSettings,
			newLogger,
			newMetrics,
			newYARPCConfig,
			newDispatcher,
			func() *Switch { return &Switch{} },
			func() *Addrs { return &Addrs{} },
		),
		errown.Module,
		fx.Invoke(func(d *yarpc.Dispatcher, s *Switch) { register(d, s) }),
		fx.Invoke(newAdmin),
	)
}

// FromFile reads an example's YAML file.
func FromFile(path string) (config.Provider, error) {
	return config.NewYAML(config.File(path))
}

func newSettings(p config.Provider) (Settings, error) {
	var s Settings
	if err := p.Get("service").Populate(&s); err != nil {
		return s, fmt.Errorf("service: %w", err)
	}
	if s.Name == "" || s.Listen == "" || s.Admin == "" {
		return s, errors.New("service: name, listen and admin are required")
	}
	return s, nil
}

func newLogger(s Settings) (*zap.Logger, error) {
	l, err := zap.NewDevelopment()
	if err != nil {
		return nil, err
	}
	return l.With(zap.String("service", s.Name)), nil
}

// metrics is the tally scope errown reports to and the handler that
// serves it to Prometheus.
type metrics struct {
	fx.Out

	Scope   tally.Scope
	Handler http.Handler `name:"metrics"`
}

func newMetrics(lc fx.Lifecycle, s Settings) metrics {
	reporter := promreporter.NewReporter(promreporter.Options{Registerer: prom.NewRegistry()})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		Tags:            map[string]string{"service": s.Name},
		CachedReporter:  reporter,
		Separator:       promreporter.DefaultSeparator,
		SanitizeOptions: &promreporter.DefaultSanitizerOpts,
	}, time.Second)
	lc.Append(fx.StopHook(closer.Close))
	return metrics{Scope: scope, Handler: reporter.HTTPHandler()}
}

// yarpcParams are what the yarpc config is built from: a Tracer is
// optional (yarpc's global tracer without one).
type yarpcParams struct {
	fx.In

	Settings Settings
	Addrs    *Addrs
	Tracer   opentracing.Tracer `optional:"true"`
}

func newYARPCConfig(p yarpcParams) yarpc.Config {
	s, addrs := p.Settings, p.Addrs
	var opts []yhttp.TransportOption
	if p.Tracer != nil {
		opts = append(opts, yhttp.Tracer(p.Tracer))
	}
	t := yhttp.NewTransport(opts...)
	addrs.yarpc = t.NewInbound(s.Listen)
	cfg := yarpc.Config{Name: s.Name, Inbounds: yarpc.Inbounds{addrs.yarpc}, Outbounds: yarpc.Outbounds{}}
	for callee, url := range s.Callees {
		cfg.Outbounds[callee] = transportOutbounds(t, url)
	}
	return cfg
}

func transportOutbounds(t *yhttp.Transport, url string) transport.Outbounds {
	return transport.Outbounds{Unary: t.NewSingleOutbound(url)}
}

func newDispatcher(lc fx.Lifecycle, cfg yarpc.Config) *yarpc.Dispatcher {
	d := yarpc.NewDispatcher(cfg)
	lc.Append(fx.StartStopHook(d.Start, d.Stop))
	return d
}

type adminParams struct {
	fx.In

	Lifecycle fx.Lifecycle
	Settings  Settings
	Addrs     *Addrs
	Switch    *Switch
	Metrics   http.Handler `name:"metrics"`
	Errown    *errown.Middleware
	Logger    *zap.Logger
}

func newAdmin(p adminParams) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", p.Metrics)
	mux.Handle("/debug/errown", debugpage.Handler(p.Errown, p.Settings.Name))
	mux.HandleFunc("/break", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			p.Switch.Set(true)
		case http.MethodDelete:
			p.Switch.Set(false)
		}
		fmt.Fprintf(w, "%s broken: %v\n", p.Settings.Name, p.Switch.Broken())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", p.Settings.Admin)
			if err != nil {
				return err
			}
			p.Addrs.admin = ln
			go func() { _ = srv.Serve(ln) }()
			p.Logger.Info("admin server listening", zap.String("addr", ln.Addr().String()))
			return nil
		},
		OnStop: srv.Shutdown,
	})
}
