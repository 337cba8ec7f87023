package errowntest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// checkoutApp is an application under test as its team writes it: a
// dispatcher built from the provided yarpc.Config, errown.Module, its
// configuration, a handler calling payments.
func checkoutApp(yamlConfig string) fx.Option {
	return fx.Options(
		fx.NopLogger,
		fx.Provide(func() (config.Provider, error) {
			return config.NewYAML(config.Source(strings.NewReader(yamlConfig)))
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
}

const _paymentsPolicy = `
errown:
  retry:
    budget: {ratio: 1}
    policies:
      - {service: payments, maxAttempts: 2, initialBackoff: 1ms, maxBackoff: 1ms, idempotent: true}
`

func TestAppOptionsJoinsTheMesh(t *testing.T) {
	for _, tr := range []string{errowntest.HTTP, errowntest.GRPC, errowntest.TChannel} {
		t.Run(tr, func(t *testing.T) {
			mesh := errowntest.NewMesh(t)
			payments := mesh.Start(errowntest.ServiceConfig{
				Name: "payments", Transport: errowntest.GRPC, Errown: &errown.Config{},
				Handler: errowntest.Fail(yarpcerrors.UnavailableErrorf("payments is down")),
			})
			app := fxtest.New(t, mesh.AppOptions("checkout", tr, "payments"), checkoutApp(_paymentsPolicy))
			app.RequireStart()
			defer app.RequireStop()

			reply := mesh.Call(context.Background(), "checkout", nil)

			assert.Equal(t, yarpcerrors.CodeUnavailable, reply.Code())
			assert.Equal(t, "unclaimed", reply.Claim, "checkout retried payments and unclaims")
			assert.Equal(t, int64(2), payments.Served(), "the application's errown retried payments once")
			require.Len(t, mesh.Recorder().Edge("checkout", "payments"), 2, "the Recorder saw the application's attempts")
			require.NotNil(t, mesh.Service("checkout").Middleware(), "the application's errown")
		})
	}
}

func TestAppOptionsWiringMistakeFailsStart(t *testing.T) {
	mesh := errowntest.NewMesh(t)
	mesh.Start(errowntest.ServiceConfig{Name: "payments", Transport: errowntest.HTTP, Errown: &errown.Config{}})
	app := fx.New(
		mesh.AppOptions("checkout", errowntest.HTTP, "payments"),
		fx.NopLogger,
		fx.Provide(func(cfg yarpc.Config, lc fx.Lifecycle) *yarpc.Dispatcher {
			d := yarpc.NewDispatcher(cfg)
			lc.Append(fx.StartStopHook(d.Start, d.Stop))
			return d
		}),
		fx.Module("checkout", errown.Module), // errown scoped away from the dispatcher
		fx.Invoke(func(*yarpc.Dispatcher) {}),
	)
	require.NoError(t, app.Err())
	err := app.Start(context.Background())
	require.ErrorIs(t, err, errown.ErrNotWired)
	assert.Nil(t, mesh.Service("checkout"), "an application that did not start is not in the mesh")
}
