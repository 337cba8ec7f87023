package errowntest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// Logf lets exampleT stand in for the testing.TB fx's own fxtest takes.
func (t *exampleT) Logf(format string, args ...any) {}

// An fx application with errown.Module, tested with fx's own fxtest
// against an in-process mesh: its dependency, payments, fails; checkout's
// errown retries it once and unclaims the error.
func ExampleMesh_AppOptions() {
	t := &exampleT{} // in a test: the *testing.T
	defer t.cleanup()

	mesh := errowntest.NewMesh(t)
	mesh.Start(errowntest.ServiceConfig{
		Name: "payments", Transport: errowntest.GRPC, Errown: &errown.Config{},
		Handler: errowntest.Fail(yarpcerrors.UnavailableErrorf("payments is down")),
	})

	app := fxtest.New(t,
		fx.NopLogger,
		mesh.AppOptions("checkout", errowntest.HTTP, "payments"),
		// The application as it is in production.
		fx.Provide(func() (config.Provider, error) {
			return config.NewYAML(config.Source(strings.NewReader(`
errown:
  retry:
    policies:
      - {service: payments, maxAttempts: 2, initialBackoff: 1ms, maxBackoff: 1ms, idempotent: true}
`)))
		}),
		fx.Provide(func(cfg yarpc.Config, lc fx.Lifecycle) *yarpc.Dispatcher {
			d := yarpc.NewDispatcher(cfg)
			lc.Append(fx.StartStopHook(d.Start, d.Stop))
			return d
		}),
		errown.Module,
		fx.Invoke(func(d *yarpc.Dispatcher) {
			payments := raw.New(d.ClientConfig("payments"))
			d.Register(raw.Procedure(errowntest.Procedure, func(ctx context.Context, body []byte) ([]byte, error) {
				return payments.Call(ctx, errowntest.Procedure, body)
			}))
		}),
	)
	app.RequireStart()
	defer app.RequireStop()

	reply := mesh.Call(context.Background(), "checkout", nil)

	fmt.Println("outside caller got:", reply.Code(), reply.Claim)
	for _, a := range mesh.Recorder().Attempts() {
		fmt.Println(a)
	}
	// Output:
	// outside caller got: unavailable unclaimed
	// checkout->payments#1 unavailable claimed
	// checkout->payments#2 unavailable claimed
	// outside->checkout#1 unavailable unclaimed
}
