package main

import (
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcerrors"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// payments is the quick start's callee, a plain yarpc service on
// 127.0.0.1 without errown: payments::charge fails its first failures
// calls with unavailable, then succeeds.
type payments struct {
	url string

	mu       sync.Mutex
	failures int
	attempts []string // errown's attempt header of each call
}

func startPayments(t *testing.T, failures int) *payments {
	t.Helper()
	p := &payments{failures: failures}
	in := http.NewTransport().NewInbound("127.0.0.1:0")
	d := yarpc.NewDispatcher(yarpc.Config{Name: "payments", Inbounds: yarpc.Inbounds{in}})
	d.Register(raw.Procedure("charge", func(ctx context.Context, body []byte) ([]byte, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.attempts = append(p.attempts, yarpc.CallFromContext(ctx).Header("errown-attempt"))
		if len(p.attempts) <= p.failures {
			return nil, yarpcerrors.UnavailableErrorf("payments is down")
		}
		return append([]byte("charged "), body...), nil
	}))
	require.NoError(t, d.Start())
	t.Cleanup(func() { require.NoError(t, d.Stop()) })
	p.url = "http://" + in.Addr().String()
	return p
}

func (p *payments) attemptHeaders() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.attempts...)
}

// startCheckout starts the quick start's fx application as main does,
// with its config.yaml, on an ephemeral port and calling payments at url.
// Its logs go to the observer returned.
func startCheckout(t *testing.T, paymentsURL string) (addr string, logs *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	var d *yarpc.Dispatcher
	checkout := fxtest.New(t,
		fx.NopLogger,
		app,
		fx.Decorate(func(*config.YAML) (*config.YAML, error) {
			override := fmt.Sprintf("checkout:\n  listen: 127.0.0.1:0\n  payments: %s\n", paymentsURL)
			return config.NewYAML(config.File("config.yaml"), config.Source(strings.NewReader(override)))
		}),
		fx.Decorate(func(*zap.Logger) *zap.Logger { return zap.New(core) }),
		fx.Populate(&d),
	)
	checkout.RequireStart()
	t.Cleanup(checkout.RequireStop)
	return d.Inbounds()[0].(*http.Inbound).Addr().String(), logs
}

// pay calls checkout::pay as a caller without errown would, and returns
// the body, the response headers and the error.
func pay(t *testing.T, addr string) (string, map[string]string, error) {
	t.Helper()
	client := yarpc.NewDispatcher(yarpc.Config{Name: "shop", Outbounds: yarpc.Outbounds{
		"checkout": {Unary: http.NewTransport().NewSingleOutbound("http://" + addr)},
	}})
	require.NoError(t, client.Start())
	defer func() { require.NoError(t, client.Stop()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var headers map[string]string
	body, err := raw.New(client.ClientConfig("checkout")).Call(ctx, "pay", []byte("1 book"), yarpc.ResponseHeaders(&headers))
	return string(body), headers, err
}

// scrape returns what Prometheus reads at /metrics on checkout's port.
func scrape(t assert.TestingT, addr string) string {
	res, err := nethttp.Get("http://" + addr + "/metrics")
	if !assert.NoError(t, err) {
		return ""
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	assert.NoError(t, err)
	return string(b)
}

// TestQuickstart runs the quick start against payments on 127.0.0.1:
// config.yaml's policy retries payments once, and when payments stays
// down checkout's error goes out unclaimed, so no caller above retries.
func TestQuickstart(t *testing.T) {
	tests := []struct {
		name         string
		giveFailures int
		wantBody     string
		wantCode     yarpcerrors.Code
		wantClaim    string
		// wantAttempts are errown's attempt headers payments saw over
		// both calls ("" when absent).
		wantAttempts []string
	}{
		{
			name:         "payments fails once: the retry succeeds",
			giveFailures: 1,
			wantBody:     "charged 1 book",
			wantCode:     yarpcerrors.CodeOK,
			// The first call: the first attempt unmarked, the retry
			// "2". The second, in the incident: a marked first
			// attempt, which succeeds.
			wantAttempts: []string{"", "2", "1"},
		},
		{
			name:         "payments is down: one retry, then unclaimed",
			giveFailures: 100,
			wantCode:     yarpcerrors.CodeUnavailable,
			wantClaim:    "unclaimed",
			wantAttempts: []string{"", "2", "1", "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startPayments(t, tt.giveFailures)
			addr, logs := startCheckout(t, p.url)

			// The first call is the incident's onset: checkout is in no
			// incident yet, so its first attempt goes unmarked (the
			// steady state sends no errown header); the retry is
			// numbered "2". The second call is in the incident (the
			// first was retried): each attempt is numbered by errown.
			for i := range 2 {
				body, headers, err := pay(t, addr)
				assert.Equal(t, tt.wantBody, body, "call %d", i)
				assert.Equal(t, tt.wantCode, yarpcerrors.FromError(err).Code(), "call %d: %v", i, err)
				assert.Equal(t, tt.wantClaim, headers["errown-claim"], "call %d", i)
			}
			// maxAttempts: 2.
			assert.Equal(t, tt.wantAttempts, p.attemptHeaders())
			started := logs.FilterMessage("errown started").All()
			require.Len(t, started, 1)
			assert.Equal(t, []any{"payments"}, started[0].ContextMap()["retryPolicies"])
			assert.Equal(t, "tally v4 Scope", started[0].ContextMap()["metrics"], "the start line names the scope errown reports to")
			// Prometheus reads errown's metrics beside yarpc, on checkout's
			// port: the calls to payments and the retries.
			assert.EventuallyWithT(t, func(c *assert.CollectT) {
				metrics := scrape(c, addr)
				assert.Contains(c, metrics, `errown_retry_calls{callee="payments"} 2`)
				assert.Contains(c, metrics, fmt.Sprintf(`errown_retry_attempts{callee="payments"} %d`, len(tt.wantAttempts)-2))
			}, 10*time.Second, 50*time.Millisecond)
		})
	}
}
