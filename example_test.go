package errown_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/errown/errown"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcerrors"
)

// The examples run checkout on 127.0.0.1, calling payments, which is
// down. checkout's errown retries payments once (its policy allows two
// attempts) and answers its own caller unclaimed, so nobody above retries.
const _checkoutYAML = `
errown:
  retry:
    policies:
      - {service: payments, maxAttempts: 2, initialBackoff: 1ms, idempotent: true}
`

// Add errown.Module to an fx application that provides a yarpc.Config:
// the dispatcher built from it runs errown's middleware.
func ExampleModule() {
	payments := startPayments()
	defer payments.stop()

	checkout := http.NewTransport()
	in := checkout.NewInbound("127.0.0.1:0")
	app := fx.New(
		fx.NopLogger,
		fx.Provide(func() (config.Provider, error) {
			return config.NewYAML(config.Source(strings.NewReader(_checkoutYAML)))
		}),
		fx.Provide(func() yarpc.Config {
			return yarpc.Config{
				Name:      "checkout",
				Inbounds:  yarpc.Inbounds{in},
				Outbounds: yarpc.Outbounds{"payments": {Unary: checkout.NewSingleOutbound(payments.url)}},
			}
		}),
		fx.Provide(func(cfg yarpc.Config, lc fx.Lifecycle) *yarpc.Dispatcher {
			d := yarpc.NewDispatcher(cfg)
			lc.Append(fx.StartStopHook(d.Start, d.Stop))
			return d
		}),
		errown.Module,
		fx.Invoke(registerPay),
	)
	start(app)
	defer stop(app)

	code, claim := pay(in.Addr().String())
	fmt.Println("checkout answered:", code, claim)
	fmt.Println("payments served:", payments.served.Load())
	// Output:
	// checkout answered: unavailable unclaimed
	// payments served: 2
}

// Where another library decorates yarpc.Config too, use errown.Grouped:
// the dispatcher constructor takes errown's middleware from the groups,
// beside what other libraries add there, and chains errown's first.
func ExampleGrouped() {
	payments := startPayments()
	defer payments.stop()

	type dispatcherParams struct {
		fx.In

		Config    yarpc.Config
		Lifecycle fx.Lifecycle
		Inbound   []middleware.UnaryInbound  `group:"yarpc.unary_inbound"`
		Outbound  []middleware.UnaryOutbound `group:"yarpc.unary_outbound"`
	}
	newDispatcher := func(p dispatcherParams) *yarpc.Dispatcher {
		cfg := p.Config
		cfg.InboundMiddleware.Unary = errown.ChainInbound(p.Inbound, cfg.InboundMiddleware.Unary)
		cfg.OutboundMiddleware.Unary = errown.ChainOutbound(p.Outbound, cfg.OutboundMiddleware.Unary)
		d := yarpc.NewDispatcher(cfg)
		p.Lifecycle.Append(fx.StartStopHook(d.Start, d.Stop))
		return d
	}
	// Another library's outbound middleware in the same group: chained
	// after errown's, it sees every attempt.
	var attempts atomic.Int64
	counting := middleware.UnaryOutboundFunc(func(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
		attempts.Add(1)
		return out.Call(ctx, req)
	})

	checkout := http.NewTransport()
	in := checkout.NewInbound("127.0.0.1:0")
	app := fx.New(
		fx.NopLogger,
		fx.Provide(func() (config.Provider, error) {
			return config.NewYAML(config.Source(strings.NewReader(_checkoutYAML)))
		}),
		fx.Provide(func() yarpc.Config {
			return yarpc.Config{
				Name:      "checkout",
				Inbounds:  yarpc.Inbounds{in},
				Outbounds: yarpc.Outbounds{"payments": {Unary: checkout.NewSingleOutbound(payments.url)}},
			}
		}),
		fx.Provide(
			newDispatcher,
			fx.Annotate(func() middleware.UnaryOutbound { return counting }, fx.ResultTags(`group:"yarpc.unary_outbound"`)),
		),
		errown.Grouped,
		fx.Invoke(registerPay),
	)
	start(app)
	defer stop(app)

	code, claim := pay(in.Addr().String())
	fmt.Println("checkout answered:", code, claim)
	fmt.Println("attempts the other middleware saw:", attempts.Load())
	fmt.Println("payments served:", payments.served.Load())
	// Output:
	// checkout answered: unavailable unclaimed
	// attempts the other middleware saw: 2
	// payments served: 2
}

// Build the middleware by hand for a dispatcher built without fx.
func ExampleNew() {
	payments := startPayments()
	defer payments.stop()

	cfg, err := errown.ConfigFromYAML([]byte(`
retry:
  policies:
    - {service: payments, maxAttempts: 2, initialBackoff: 1ms, idempotent: true}
`))
	if err != nil {
		panic(err)
	}
	mw, err := errown.New(cfg)
	if err != nil {
		panic(err)
	}
	// Start loads the dependency memory's snapshot, if any, and starts
	// errown's background work; Stop ends it. errown.Module does both.
	if err := mw.Start(); err != nil {
		panic(err)
	}
	defer mw.Stop()
	checkout := http.NewTransport()
	in := checkout.NewInbound("127.0.0.1:0")
	d := yarpc.NewDispatcher(mw.Apply(yarpc.Config{
		Name:      "checkout",
		Inbounds:  yarpc.Inbounds{in},
		Outbounds: yarpc.Outbounds{"payments": {Unary: checkout.NewSingleOutbound(payments.url)}},
	}))
	registerPay(d)
	if err := d.Start(); err != nil {
		panic(err)
	}
	defer func() { _ = d.Stop() }()

	code, claim := pay(in.Addr().String())
	fmt.Println("checkout answered:", code, claim)
	fmt.Println("payments served:", payments.served.Load())
	// Output:
	// checkout answered: unavailable unclaimed
	// payments served: 2
}

// Configuration errors name the key and the value.
func ExampleConfigFromYAML() {
	_, err := errown.ConfigFromYAML([]byte("ingress:\n  shards: 3\nretry:\n  budget:\n    window: forever\n"))
	fmt.Println(err)
	// Output: errown: config: retry.budget.window: want a duration such as 10s, got string "forever"
}

// paymentsService is the examples' callee: a yarpc service on 127.0.0.1
// without errown whose payments::charge always fails.
type paymentsService struct {
	url    string
	served atomic.Int64
	d      *yarpc.Dispatcher
}

func startPayments() *paymentsService {
	p := &paymentsService{}
	in := http.NewTransport().NewInbound("127.0.0.1:0")
	p.d = yarpc.NewDispatcher(yarpc.Config{Name: "payments", Inbounds: yarpc.Inbounds{in}})
	p.d.Register(raw.Procedure("charge", func(context.Context, []byte) ([]byte, error) {
		p.served.Add(1)
		return nil, yarpcerrors.UnavailableErrorf("payments is down")
	}))
	if err := p.d.Start(); err != nil {
		panic(err)
	}
	p.url = "http://" + in.Addr().String()
	return p
}

func (p *paymentsService) stop() { _ = p.d.Stop() }

// registerPay serves checkout::pay, which calls payments::charge.
func registerPay(d *yarpc.Dispatcher) {
	payments := raw.New(d.ClientConfig("payments"))
	d.Register(raw.Procedure("pay", func(ctx context.Context, body []byte) ([]byte, error) {
		return payments.Call(ctx, "charge", body)
	}))
}

// pay calls checkout::pay at addr as a caller without errown does, and
// returns the error's code and the claim it came with.
func pay(addr string) (code yarpcerrors.Code, claim string) {
	client := yarpc.NewDispatcher(yarpc.Config{Name: "shop", Outbounds: yarpc.Outbounds{
		"checkout": {Unary: http.NewTransport().NewSingleOutbound("http://" + addr)},
	}})
	if err := client.Start(); err != nil {
		panic(err)
	}
	defer func() { _ = client.Stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var headers map[string]string
	_, err := raw.New(client.ClientConfig("checkout")).Call(ctx, "pay", nil, yarpc.ResponseHeaders(&headers))
	return yarpcerrors.FromError(err).Code(), headers["errown-claim"]
}

func start(app *fx.App) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		panic(err)
	}
}

func stop(app *fx.App) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := app.Stop(ctx); err != nil {
		panic(err)
	}
}
