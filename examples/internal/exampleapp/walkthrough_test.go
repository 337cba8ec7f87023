package exampleapp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/examples/internal/exampleapp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	yhttp "go.uber.org/yarpc/transport/http"
)

// service is one example service started in-process from its own
// config.yaml, on ephemeral ports.
type service struct {
	name  string
	app   *fxtest.App
	addrs *exampleapp.Addrs
}

// startService starts the example in examples/<name> with its config file,
// listening on 127.0.0.1:0 and calling callees at the given URLs.
func startService(t *testing.T, name string, register exampleapp.Register, callees map[string]string) *service {
	t.Helper()
	base, err := os.ReadFile(filepath.Join("..", "..", name, "config.yaml"))
	require.NoError(t, err)
	var override bytes.Buffer
	fmt.Fprintf(&override, "service:\n  listen: 127.0.0.1:0\n  admin: 127.0.0.1:0\n")
	if len(callees) > 0 {
		fmt.Fprintf(&override, "  callees:\n")
		for callee, url := range callees {
			fmt.Fprintf(&override, "    %s: %s\n", callee, url)
		}
	}
	provider, err := config.NewYAML(config.Source(bytes.NewReader(base)), config.Source(&override))
	require.NoError(t, err)
	s := &service{name: name}
	s.app = fxtest.New(t, fx.NopLogger, exampleapp.Options(provider, register), fx.Populate(&s.addrs))
	s.app.RequireStart()
	t.Cleanup(s.app.RequireStop)
	return s
}

func (s *service) url() string { return "http://" + s.addrs.YARPC() }

func (s *service) admin(t *testing.T, method, path string) string {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.addrs.Admin()+path, nil)
	require.NoError(t, err)
	res, err := noKeepAlive.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(b))
	return string(b)
}

var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

// metric returns the value of one series in the service's /metrics page,
// "" when absent.
func (s *service) metric(t *testing.T, series string) string {
	for _, line := range strings.Split(s.admin(t, http.MethodGet, "/metrics"), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			return rest
		}
	}
	return ""
}

// mesh is the three example services, frontend → orders → inventory.
type mesh struct {
	frontend, orders, inventory *service
}

func startMesh(t *testing.T) mesh {
	var m mesh
	m.inventory = startService(t, "inventory", exampleapp.Inventory, nil)
	m.orders = startService(t, "orders", exampleapp.Orders, map[string]string{"inventory": m.inventory.url()})
	m.frontend = startService(t, "frontend", exampleapp.Frontend, map[string]string{"orders": m.orders.url()})
	return m
}

// checkout calls frontend::checkout as curl would, and returns the body,
// the claim header and the error.
func (m mesh) checkout(t *testing.T) (string, string, error) {
	t.Helper()
	client := yarpc.NewDispatcher(yarpc.Config{Name: "curl", Outbounds: yarpc.Outbounds{
		"frontend": {Unary: yhttp.NewTransport().NewSingleOutbound(m.frontend.url())},
	}})
	require.NoError(t, client.Start())
	defer func() { require.NoError(t, client.Stop()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var headers map[string]string
	body, err := raw.New(client.ClientConfig("frontend")).Call(ctx, "checkout", []byte("1 book"), yarpc.ResponseHeaders(&headers))
	return string(body), headers["errown-claim"], err
}

// TestWalkthrough follows examples/README.md: start the three services,
// break inventory, and see which hop owned the error and that no layer
// above orders retried.
func TestWalkthrough(t *testing.T) {
	m := startMesh(t)

	body, claim, err := m.checkout(t)
	require.NoError(t, err)
	assert.Equal(t, "order placed, reserved 1 book", body)
	assert.Equal(t, "", claim)

	assert.Equal(t, "inventory broken: true\n", m.inventory.admin(t, http.MethodPost, "/break"))
	_, claim, err = m.checkout(t)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "inventory is broken")
	assert.Equal(t, "unclaimed", claim, "orders retried inventory, so nobody above retries")

	// The metrics say the same, hop by hop (tally reports every second).
	want := []struct {
		svc    *service
		series string
		value  string
	}{
		{m.inventory, `errown_inbound_claimed{service="inventory"}`, "2"}, // the first attempt and the retry
		{m.orders, `errown_retry_attempts{callee="inventory",service="orders"}`, "1"},
		{m.orders, `errown_inbound_unclaimed{service="orders"}`, "1"},
		{m.frontend, `errown_retry_suppressed{callee="orders",service="frontend"}`, "1"},
		{m.frontend, `errown_retry_attempts{callee="orders",service="frontend"}`, "0"},
		{m.frontend, `errown_inbound_unclaimed{service="frontend"}`, "1"},
	}
	for _, w := range want {
		assert.Eventually(t, func() bool { return w.svc.metric(t, w.series) == w.value }, 10*time.Second, 50*time.Millisecond,
			"%s on %s: got %q, want %q", w.series, w.svc.name, w.svc.metric(t, w.series), w.value)
	}

	// The debug page of orders shows who owned the error.
	page := m.orders.admin(t, http.MethodGet, "/debug/errown")
	assert.Contains(t, page, "<td>place</td><td>inventory::reserve</td>")
	assert.Contains(t, page, `<td class="unclaimed">unclaimed</td>`)
	assert.Contains(t, page, "retried below")
	assert.Contains(t, m.inventory.admin(t, http.MethodGet, "/debug/errown?format=json"), `"reason": "own failure"`)

	assert.Equal(t, "inventory broken: false\n", m.inventory.admin(t, http.MethodDelete, "/break"))
	_, _, err = m.checkout(t)
	require.NoError(t, err)
}
