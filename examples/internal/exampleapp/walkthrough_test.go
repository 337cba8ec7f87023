package exampleapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/examples/internal/exampleapp"
	"github.com/errown/errown/inbound"
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

// startService starts the example in examples/<name> with its config file
// (file, in that directory), listening on 127.0.0.1:0 and calling callees
// at the given URLs.
func startService(t *testing.T, name, file string, register exampleapp.Register, callees map[string]string, opts ...fx.Option) *service {
	t.Helper()
	base, err := os.ReadFile(filepath.Join("..", "..", name, file))
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
	s.app = fxtest.New(t, fx.NopLogger, exampleapp.Options(provider, register), fx.Populate(&s.addrs), fx.Options(opts...))
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

// eventually waits until the series has the value in the service's
// /metrics page (tally reports every second).
func (s *service) eventually(t *testing.T, series, value string) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return s.metric(t, series) == value }, 10*time.Second, 50*time.Millisecond) {
		assert.Failf(t, "metric not reached", "%s on %s: got %q, want %q", series, s.name, s.metric(t, series), value)
	}
}

// mesh is the three example services, frontend → orders → inventory.
type mesh struct {
	frontend, orders, inventory *service
}

func startMesh(t *testing.T) mesh { return startMeshWith(t, "config.yaml") }

// startMeshWith starts the mesh with frontend's configuration from
// examples/frontend/<frontendFile>.
func startMeshWith(t *testing.T, frontendFile string) mesh {
	var m mesh
	m.inventory = startService(t, "inventory", "config.yaml", exampleapp.Inventory, nil)
	m.orders = startService(t, "orders", "config.yaml", exampleapp.Orders, map[string]string{"inventory": m.inventory.url()})
	m.frontend = startService(t, "frontend", frontendFile, exampleapp.Frontend, map[string]string{"orders": m.orders.url()})
	return m
}

// checkout calls frontend::checkout as curl would, and returns the body,
// the response headers and the error.
func (m mesh) checkout(t *testing.T) (string, map[string]string, error) {
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
	return string(body), headers, err
}

// errownHeaders returns the errown headers among response headers, never
// nil.
func errownHeaders(headers map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range headers {
		if strings.HasPrefix(strings.ToLower(k), "errown-") {
			out[k] = v
		}
	}
	return out
}

// TestWalkthrough follows examples/README.md: start the three services,
// break inventory, and see which hop owned the error, that no layer
// above orders retried, and the storm figures frontend (the root) reports.
func TestWalkthrough(t *testing.T) {
	m := startMesh(t)

	body, headers, err := m.checkout(t)
	require.NoError(t, err)
	assert.Equal(t, "order placed, reserved 1 book", body)
	// The steady state: a success in no incident, to a caller without
	// errown, carries no errown header at all, though it took 3 requests.
	assert.Equal(t, map[string]string{}, errownHeaders(headers), "a quiet success's errown headers")

	assert.Equal(t, "inventory broken: true\n", m.inventory.admin(t, http.MethodPost, "/break"))
	_, headers, err = m.checkout(t)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "inventory is broken")
	assert.Equal(t, "unclaimed", headers["errown-claim"], "orders retried inventory, so nobody above retries")
	// Served 4 (frontend, orders, inventory twice); blind 7 (frontend
	// retrying orders, which retries inventory: 1 + 2 + 4); 1 retry; radius
	// 1 with errown, 2 blind.
	assert.Equal(t, "4,7,1,1,2", headers["errown-storm"])

	// The metrics say the same, hop by hop (tally reports every second).
	// This checkout is the incident's onset: frontend's call to orders
	// went unmarked (frontend was in no incident yet), so orders, its
	// request a root too, recorded a storm of its own subtree (orders and
	// inventory twice: 3 served, 3 blind, 1 retry, radius 1).
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
		// frontend is the root (curl runs no errown): it records the storm.
		{m.frontend, `errown_storm_requests{procedure="checkout",service="frontend"}`, "1"},
		{m.frontend, `errown_storm_unknown{procedure="checkout",service="frontend"}`, "0"},
		{m.frontend, `errown_storm_prevented{procedure="checkout",service="frontend"}`, "3"},
		{m.frontend, `errown_storm_retries{procedure="checkout",service="frontend"}`, "1"},
		{m.frontend, `errown_storm_radius_bucket{procedure="checkout",service="frontend",le="0"}`, "0"},
		{m.frontend, `errown_storm_radius_bucket{procedure="checkout",service="frontend",le="1"}`, "1"},
		{m.frontend, `errown_storm_blind_radius_bucket{procedure="checkout",service="frontend",le="1"}`, "0"},
		{m.frontend, `errown_storm_blind_radius_bucket{procedure="checkout",service="frontend",le="2"}`, "1"},
		// frontend's own suppressed retry prevented them; orders suppressed
		// nothing.
		{m.frontend, `errown_retry_prevented{callee="orders",service="frontend"}`, "3"},
		{m.orders, `errown_retry_prevented{callee="inventory",service="orders"}`, "0"},
		{m.frontend, `errown_retry_would_suppress{callee="orders",service="frontend"}`, "0"},
		// What the user lost, where it was decided: frontend suppressed a
		// retry its policy would have sent, orders' retry was its last
		// attempt.
		{m.frontend, `errown_inbound_failed_after_denied{reason="unclaimed",service="frontend"}`, "1"},
		{m.orders, `errown_inbound_failed_after_denied{reason="attempt_limit",service="orders"}`, "1"},
		{m.orders, `errown_inbound_failed_after_denied{reason="budget",service="orders"}`, "0"},
		// orders' onset storm.
		{m.orders, `errown_storm_requests{procedure="place",service="orders"}`, "1"},
		{m.orders, `errown_storm_unknown{procedure="place",service="orders"}`, "0"},
		{m.orders, `errown_storm_prevented{procedure="place",service="orders"}`, "0"},
		{m.orders, `errown_storm_retries{procedure="place",service="orders"}`, "1"},
	}
	for _, w := range want {
		w.svc.eventually(t, w.series, w.value)
	}

	// The debug page of orders shows who owned the error.
	page := m.orders.admin(t, http.MethodGet, "/debug/errown")
	assert.Contains(t, page, "<td>place</td><td>inventory::reserve</td>")
	assert.Contains(t, page, `<td class="unclaimed">unclaimed</td>`)
	assert.Contains(t, page, "retried here")
	assert.Contains(t, m.inventory.admin(t, http.MethodGet, "/debug/errown?format=json"), `"reason": "own failure"`)

	// The debug page of frontend shows the storm: radius 1 against 2,
	// served 4 against 7, 3 prevented, 1 retry.
	page = m.frontend.admin(t, http.MethodGet, "/debug/errown")
	assert.Contains(t, page, `<tr><td>requests prevented below root requests (storm.prevented)</td><td class="num">3</td></tr>`)
	assert.Contains(t, page, `<tr><td class="failed">requests lost: failed after this service declined a retry, unclaimed</td><td class="num">1</td></tr>`)
	assert.Contains(t, page, `<td>checkout</td><td class="failed">failed</td>`+"\n"+
		`<td class="num">1</td><td class="num">2</td><td class="num">4</td><td class="num">7</td><td class="num">3</td><td class="num">1</td>`)
	var storms struct {
		Storms []inbound.Storm `json:"storms"`
	}
	require.NoError(t, json.Unmarshal([]byte(m.frontend.admin(t, http.MethodGet, "/debug/errown?format=json")), &storms))
	require.Len(t, storms.Storms, 1)
	got := storms.Storms[0]
	got.Time = time.Time{}
	// At the onset: one of its calls went unmarked.
	assert.Equal(t, inbound.Storm{Procedure: "checkout", Known: true, Failed: true, Served: 4, Blind: 7, Prevented: 3, Retries: 1, Radius: 1, BlindRadius: 2, Onset: true}, got)
	// orders' debug page shows its onset storm: radius 1 against 1,
	// served 3 against 3, none prevented, 1 retry.
	page = m.orders.admin(t, http.MethodGet, "/debug/errown")
	assert.Contains(t, page, `<td>place</td><td class="failed">failed</td>`+"\n"+
		`<td class="num">1</td><td class="num">1</td><td class="num">3</td><td class="num">3</td><td class="num">0</td><td class="num">1</td>`)
	var ordersStorms struct {
		Storms []inbound.Storm `json:"storms"`
	}
	require.NoError(t, json.Unmarshal([]byte(m.orders.admin(t, http.MethodGet, "/debug/errown?format=json")), &ordersStorms))
	require.Len(t, ordersStorms.Storms, 1)
	got = ordersStorms.Storms[0]
	got.Time = time.Time{}
	assert.Equal(t, inbound.Storm{Procedure: "place", Known: true, Failed: true, Served: 3, Blind: 3, Retries: 1, Radius: 1, BlindRadius: 1, Onset: true}, got)

	assert.Equal(t, "inventory broken: false\n", m.inventory.admin(t, http.MethodDelete, "/break"))
	_, headers, err = m.checkout(t)
	require.NoError(t, err)
	// curl runs no errown, so its request is unmarked: frontend's quiet
	// success answers it without figures.
	assert.Equal(t, map[string]string{}, errownHeaders(headers), "a quiet success's errown headers")
	require.NoError(t, json.Unmarshal([]byte(m.frontend.admin(t, http.MethodGet, "/debug/errown?format=json")), &storms))
	assert.Len(t, storms.Storms, 1, "a success without a retry below is no storm")
	require.NoError(t, json.Unmarshal([]byte(m.orders.admin(t, http.MethodGet, "/debug/errown?format=json")), &ordersStorms))
	assert.Len(t, ordersStorms.Storms, 1, "orders: a success without a retry below is no storm")
}

// TestWalkthroughObserve follows the README's observe step: frontend in
// mode observe retries orders as if errown were not there, and reports as
// prevented exactly what enforce mode prevents in TestWalkthrough.
func TestWalkthroughObserve(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("..", "..", "frontend", "config.yaml"))
	require.NoError(t, err)
	observe, err := os.ReadFile(filepath.Join("..", "..", "frontend", "observe.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(observe), strings.Replace(string(base), "errown:\n", "errown:\n  mode: observe\n", 1),
		"observe.yaml is config.yaml with mode: observe")

	m := startMeshWith(t, "observe.yaml")
	m.inventory.admin(t, http.MethodPost, "/break")
	_, headers, err := m.checkout(t)
	require.Error(t, err)
	assert.Equal(t, "unclaimed", headers["errown-claim"], "claims are computed and sent as in enforce mode")
	assert.Equal(t, "4,7,1,1,2", headers["errown-storm"], "the same figures as in enforce mode")

	for _, w := range []struct {
		svc    *service
		series string
		value  string
	}{
		// What happened: frontend retried the unclaimed error, orders
		// retried inventory both times: 4 requests at inventory.
		{m.inventory, `errown_inbound_claimed{service="inventory"}`, "4"},
		{m.orders, `errown_retry_attempts{callee="inventory",service="orders"}`, "2"},
		{m.frontend, `errown_retry_attempts{callee="orders",service="frontend"}`, "1"},
		{m.frontend, `errown_retry_suppressed{callee="orders",service="frontend"}`, "0"},
		{m.frontend, `errown_retry_would_suppress{callee="orders",service="frontend"}`, "1"},
		// What enforce mode would prevent: the 3 requests it prevents.
		{m.frontend, `errown_retry_prevented{callee="orders",service="frontend"}`, "3"},
		{m.frontend, `errown_storm_prevented{procedure="checkout",service="frontend"}`, "3"},
	} {
		w.svc.eventually(t, w.series, w.value)
	}
}
