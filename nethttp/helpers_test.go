package nethttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
)

// Header names on the wire, errown's default names as yarpc's HTTP
// transport carries them.
const (
	_claim   = "Rpc-Header-Errown-Claim"
	_storm   = "Rpc-Header-Errown-Storm"
	_attempt = "Rpc-Header-Errown-Attempt"
	_noRetry = "Rpc-Header-Errown-No-Retry"
)

// _path is what every test service serves, and _pattern its ServeMux
// pattern: the procedure Handler names by default.
const (
	_path    = "/call"
	_pattern = "GET /call"
)

// policyConfig is an errown config with a retry policy for callee (none
// when callee is empty): two attempts, a millisecond's backoff,
// idempotent, no budget (every wanted retry allowed, in both worlds), in
// mode.
func policyConfig(callee string, mode retry.Mode) errown.Config {
	cfg := errown.Config{Mode: mode, Retry: errown.RetryConfig{Budget: retry.BudgetConfig{Disabled: true}}}
	if callee != "" {
		cfg.Retry.Policies = []retry.PolicyConfig{{
			Service:        callee,
			MaxAttempts:    2,
			InitialBackoff: time.Millisecond,
			MaxBackoff:     time.Millisecond,
			Idempotent:     new(true),
		}}
	}
	return cfg
}

// newMiddleware builds and starts errown's middleware for a test, with
// its metrics on scope and root storms to hook (either may be nil), and
// stops it when the test ends.
func newMiddleware(t *testing.T, cfg errown.Config, scope tally.Scope, hook func(inbound.Storm)) *errown.Middleware {
	t.Helper()
	opts := []errown.Option{errown.WithStormHook(hook)}
	if scope != nil {
		opts = append(opts, errown.WithScope(scope))
	}
	mw, err := errown.New(cfg, opts...)
	require.NoError(t, err, "errown.New")
	require.NoError(t, mw.Start(), "Start")
	t.Cleanup(func() {
		assert.NoError(t, mw.Stop(), "Stop")
	})
	return mw
}

// newBase returns an HTTP transport whose idle connections close when the
// test ends, so that no goroutine outlives it.
func newBase(t *testing.T) *http.Transport {
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return base
}

// node is one plain net/http service of a test mesh on 127.0.0.1: it
// counts the requests it serves, and calls its callee, if any, with the
// request's context, then answers with the callee's status, or fails
// itself with fail.
type node struct {
	name   string
	url    string
	served atomic.Int64
	scope  tally.TestScope
	mw     *errown.Middleware // nil: no errown

	mu       sync.Mutex
	storms   []inbound.Storm
	seen     []http.Header // the headers of each response from its callee
	received []http.Header // the headers of each request it served
}

// nodeConfig describes a node.
type nodeConfig struct {
	name string
	// errown runs errown's Handler and Transport; without it the node is
	// plain net/http and does not retry.
	errown bool
	// mode is errown's; policy gives it a retry policy for the callee.
	mode   retry.Mode
	policy bool
	// callee is called on every request, if set.
	callee *node
	// fail is the status the node answers with when its callee did not
	// fail: 0 for success.
	fail int
	// handlerOptions are given to Handler.
	handlerOptions []nethttp.HandlerOption
	// serve replaces the node's handler when set.
	serve http.HandlerFunc
	// pattern is what the node serves: default _pattern.
	pattern string
	// inner is the application's own RoundTripper, between errown's
	// Transport and the base transport (below Attempts when attempts).
	inner func(http.RoundTripper) http.RoundTripper
	// attempts puts errown's Attempts next to the base transport.
	attempts bool
}

// startNode starts a node, serving GET /call (or cfg.pattern), until the
// test ends.
func startNode(t *testing.T, cfg nodeConfig) *node {
	t.Helper()
	n := &node{name: cfg.name, scope: tally.NewTestScope("", nil)}
	tcfg := testmesh.Config{Kind: testmesh.NetHTTP, HandlerOptions: cfg.handlerOptions}
	if cfg.errown {
		callee := ""
		if cfg.policy && cfg.callee != nil {
			callee = cfg.callee.name
		}
		ecfg := policyConfig(callee, cfg.mode)
		tcfg.Errown, tcfg.ErrownOptions = &ecfg, n.options()
	}
	tcfg.Handler = func(mw *errown.Middleware) (http.Handler, error) {
		client := &http.Client{Transport: newBase(t)}
		if mw != nil && cfg.callee != nil {
			name := cfg.callee.name
			base := client.Transport
			if cfg.attempts {
				base = nethttp.Attempts(mw, base)
			}
			if cfg.inner != nil {
				base = cfg.inner(base)
			}
			client.Transport = nethttp.Transport(mw, base,
				nethttp.WithService(func(*http.Request) string { return name }))
		}
		serve := cfg.serve
		if serve == nil {
			serve = func(w http.ResponseWriter, r *http.Request) { n.serve(w, r, client, cfg.callee, cfg.fail) }
		}
		pattern := cfg.pattern
		if pattern == "" {
			pattern = _pattern
		}
		mux := http.NewServeMux()
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			n.served.Add(1)
			n.mu.Lock()
			n.received = append(n.received, r.Header.Clone())
			n.mu.Unlock()
			serve(w, r)
		})
		return mux, nil
	}
	n.url, n.mw = start(t, tcfg)
	return n
}

// start starts a node as cfg describes until the test ends, and returns
// its URL (for a net/http node) or address (for a yarpc one), and its
// errown.
func start(t *testing.T, cfg testmesh.Config) (string, *errown.Middleware) {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "node"
	}
	node, err := testmesh.Start(cfg)
	require.NoError(t, err, "start %s", cfg.Name)
	t.Cleanup(func() {
		assert.NoError(t, node.Stop(), "stop %s", cfg.Name)
	})
	if cfg.Kind == testmesh.NetHTTP {
		return "http://" + node.Addr(), node.Middleware()
	}
	return node.Addr(), node.Middleware()
}

// options are the errown options of a node: its metrics on n.scope, its
// root storms to n.hook.
func (n *node) options() []errown.Option {
	return []errown.Option{errown.WithScope(n.scope), errown.WithStormHook(n.hook)}
}

// newServer serves h on 127.0.0.1 until the test ends, and returns its
// URL.
func newServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (n *node) serve(w http.ResponseWriter, r *http.Request, client *http.Client, callee *node, fail int) {
	body := n.name
	if callee != nil {
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, callee.url+_path, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		res, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		b, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		n.mu.Lock()
		n.seen = append(n.seen, res.Header.Clone())
		n.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if res.StatusCode >= 400 {
			// The callee's failure is this node's: same status.
			http.Error(w, fmt.Sprintf("%s: %s", n.name, b), res.StatusCode)
			return
		}
		body += ">" + string(b)
	}
	if fail != 0 {
		http.Error(w, n.name+" is down", fail)
		return
	}
	_, _ = io.WriteString(w, body)
}

func (n *node) hook(s inbound.Storm) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.storms = append(n.storms, s)
}

// rootStorms returns the root storms the node's hook saw, without their
// times, after checking each has one.
func (n *node) rootStorms(t *testing.T) []inbound.Storm {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	out := slices.Clone(n.storms)
	for i := range out {
		assert.False(t, out[i].Time.IsZero(), "%s: root storm %d has no time", n.name, i)
		out[i].Time = time.Time{}
	}
	return out
}

// calleeHeaders returns the headers of the responses the node got from its
// callee, one per request it served (the last attempt's).
func (n *node) calleeHeaders() []http.Header {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.seen)
}

// requestHeaders returns the headers of the requests the node served,
// oldest first.
func (n *node) requestHeaders() []http.Header {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.received)
}

// errownHeaders returns h's errown headers (Rpc-Header-Errown-*), never
// nil: what of errown's a request or a response carried on the wire.
func errownHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Rpc-Header-Errown-") {
			out[k] = vs
		}
	}
	return out
}

// counter returns the node's errown counter name (under "errown."), with
// tags.
func (n *node) counter(name string, tags map[string]string) int64 {
	if c, ok := n.scope.Snapshot().Counters()[tally.KeyForPrefixedStringMap("errown."+name, tags)]; ok {
		return c.Value()
	}
	return 0
}

// reply is what the outside caller got.
type reply struct {
	status int
	header http.Header
	body   string
}

// get calls url+_path from outside the mesh, with a plain client: the
// first service is a root.
func get(t *testing.T, url string) reply {
	t.Helper()
	return do(t, http.MethodGet, url+_path, nil, nil)
}

// do sends a request from outside the mesh with a plain client.
func do(t *testing.T, method, url string, body io.Reader, header http.Header) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	require.NoError(t, err, "NewRequest")
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := (&http.Client{Transport: newBase(t)}).Do(req)
	require.NoError(t, err, "%s %s", method, url)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err, "read body")
	return reply{status: res.StatusCode, header: res.Header, body: string(b)}
}

// served returns the requests each node served, by name.
func served(nodes ...*node) map[string]int64 {
	m := make(map[string]int64, len(nodes))
	for _, n := range nodes {
		m[n.name] = n.served.Load()
	}
	return m
}
