package nethttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// _procedure is the raw procedure every yarpc service of these tests
// serves.
const _procedure = "call"

// yarpcService is a yarpc dispatcher on 127.0.0.1 over yarpc's HTTP
// transport, with errown applied as errown.Middleware.Apply applies it.
type yarpcService struct {
	name   string
	addr   string
	served atomic.Int64
	scope  tally.TestScope

	mu     sync.Mutex
	claims []ownership.Claim // the claim of its callee's last failed call, per request
	storms []inbound.Storm
}

// startYARPC starts a yarpc service with errown and a policy of two
// attempts for callee, if any, reached at calleeURL; its procedure calls
// the callee with the request body when there is one, and fails with
// unavailable when fail is set.
func startYARPC(t *testing.T, name, callee, calleeURL string, fail bool) *yarpcService {
	t.Helper()
	s := &yarpcService{name: name, scope: tally.NewTestScope("", nil)}
	ecfg := policyConfig(callee, retry.ModeEnforce)
	cfg := testmesh.Config{Name: name, Kind: testmesh.HTTP, Errown: &ecfg,
		ErrownOptions: []errown.Option{errown.WithScope(s.scope), errown.WithStormHook(s.hook)}}
	if callee != "" {
		cfg.Callees = []testmesh.Callee{{Name: callee, Kind: testmesh.NetHTTP, Addr: strings.TrimPrefix(calleeURL, "http://")}}
	}
	cfg.Register = func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
		var rc raw.Client
		if callee != "" {
			rc = raw.New(d.ClientConfig(callee))
		}
		d.Register(raw.Procedure(_procedure, func(ctx context.Context, body []byte) ([]byte, error) {
			s.served.Add(1)
			res := body
			if rc != nil {
				var err error
				res, err = rc.Call(ctx, _procedure, body)
				if claim, ok := outbound.Claim(ctx, callee, _procedure); ok {
					s.mu.Lock()
					s.claims = append(s.claims, claim)
					s.mu.Unlock()
				}
				if err != nil {
					return nil, err
				}
			}
			if fail {
				return nil, yarpcerrors.UnavailableErrorf("%s is down", name)
			}
			return append([]byte(name+">"), res...), nil
		}))
		return nil
	}
	s.addr, _ = start(t, cfg)
	return s
}

func (s *yarpcService) hook(st inbound.Storm) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storms = append(s.storms, st)
}

// rootStorms returns the root storms the service's hook saw, their times
// zeroed.
func (s *yarpcService) rootStorms() []inbound.Storm {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]inbound.Storm(nil), s.storms...)
	for i := range out {
		out[i].Time = time.Time{}
	}
	return out
}

func (s *yarpcService) calleeClaims() []ownership.Claim {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ownership.Claim(nil), s.claims...)
}

// yarpcRequest builds a request a net/http service sends to a yarpc
// service's procedure over yarpc's HTTP transport: POST with the headers
// yarpc's HTTP inbound requires, and a deadline.
func yarpcRequest(ctx context.Context, caller, service, addr string, body string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Rpc-Caller", caller)
	req.Header.Set("Rpc-Service", service)
	req.Header.Set("Rpc-Procedure", _procedure)
	req.Header.Set("Rpc-Encoding", "raw")
	return req, nil
}

// callYARPC calls a yarpc service from outside, over plain HTTP without
// errown: it is a root. extra headers are sent too.
func callYARPC(t *testing.T, s *yarpcService, extra ...string) reply {
	t.Helper()
	h := http.Header{}
	for k, v := range map[string]string{"Rpc-Caller": "outside", "Rpc-Service": s.name, "Rpc-Procedure": _procedure, "Rpc-Encoding": "raw", "Context-TTL-MS": "10000"} {
		h.Set(k, v)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return do(t, http.MethodPost, "http://"+s.addr+"/", strings.NewReader("hi"), h)
}

// startNetHTTPCallingYARPC starts a net/http service under errown whose
// POST /call calls the yarpc service y (a policy of two attempts for it),
// named by the request's Rpc-Service header, and answers with y's status.
func startNetHTTPCallingYARPC(t *testing.T, name string, y *yarpcService) *node {
	t.Helper()
	n := &node{name: name, scope: tally.NewTestScope("", nil)}
	ecfg := policyConfig(y.name, retry.ModeEnforce)
	handler := func(mw *errown.Middleware) (http.Handler, error) {
		client := &http.Client{Transport: nethttp.Transport(mw, newBase(t))} // the callee named by Rpc-Service
		mux := http.NewServeMux()
		mux.HandleFunc("/call", func(w http.ResponseWriter, r *http.Request) {
			n.served.Add(1)
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second) // yarpc wants a deadline
			defer cancel()
			req, err := yarpcRequest(ctx, name, y.name, y.addr, "hi")
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			res, err := client.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			n.mu.Lock()
			n.seen = append(n.seen, res.Header.Clone())
			n.mu.Unlock()
			if res.StatusCode >= 400 {
				http.Error(w, name+": "+string(b), res.StatusCode)
				return
			}
			_, _ = io.WriteString(w, name+">"+string(b))
		})
		return mux, nil
	}
	n.url, n.mw = start(t, testmesh.Config{Name: name, Kind: testmesh.NetHTTP, Errown: &ecfg, ErrownOptions: n.options(), Handler: handler})
	return n
}

// A yarpc service calls a net/http service that fails: the yarpc caller
// reads the net/http service's claim (claimed), retries it once, and
// answers its own caller unclaimed.
func TestYARPCCallsNetHTTP(t *testing.T) {
	n := startNode(t, nodeConfig{name: "N", errown: true, pattern: "POST /call", fail: http.StatusServiceUnavailable})
	y := startYARPC(t, "ysvc", "nsvc", n.url+_path, false)

	r := callYARPC(t, y)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "the yarpc service's status")
	assert.Equal(t, "unclaimed", r.header.Get(_claim), "the yarpc service's claim")
	assert.Equal(t, []ownership.Claim{ownership.ClaimClaimed}, y.calleeClaims(), "the yarpc service read claims from the net/http service")
	assert.Equal(t, int64(1), y.served.Load(), "served: yarpc")
	assert.Equal(t, int64(2), n.served.Load(), "served: net/http")
	assert.Equal(t, int64(2), n.counter("inbound.claimed", nil), "net/http service: inbound.claimed")
}

// A net/http service calls a yarpc service that fails: the net/http
// service reads the yarpc service's claim, retries once and answers its
// own caller unclaimed.
func TestNetHTTPCallsYARPC(t *testing.T) {
	y := startYARPC(t, "ysvc", "", "", true)
	n := startNetHTTPCallingYARPC(t, "N", y)

	r := get(t, n.url)
	assert.Equal(t, http.StatusServiceUnavailable, r.status, "the net/http service answered %d %q", r.status, r.body)
	assert.Equal(t, "unclaimed", r.header.Get(_claim), "the net/http service's claim")
	for _, h := range n.calleeHeaders() {
		assert.Equal(t, "claimed", h.Get(_claim), "the yarpc service's claim")
	}
	assert.Equal(t, int64(2), y.served.Load(), "served: yarpc")
	assert.Equal(t, int64(1), n.served.Load(), "served: net/http")
	assert.Equal(t, int64(1), n.counter("retry.attempts", map[string]string{"callee": "ysvc"}), "net/http service: retry.attempts")
}

// A mixed chain, net/http → yarpc → net/http, the last failing: only the
// yarpc service, next to the failure, retries; the root's storm figures
// are those of the examples' mesh (examples/README.md), 4 served, 7 blind. The first
// root request is the incident's onset, the second is in it.
func TestMixedChain(t *testing.T) {
	n2 := startNode(t, nodeConfig{name: "N2", errown: true, pattern: "POST /call", fail: http.StatusServiceUnavailable})
	y := startYARPC(t, "ysvc", "n2", n2.url+_path, false)
	n1 := startNetHTTPCallingYARPC(t, "N1", y)

	for i := range 2 {
		r := get(t, n1.url)
		assert.Equal(t, http.StatusServiceUnavailable, r.status, "root request %d: N1's status", i)
		assert.Equal(t, "unclaimed", r.header.Get(_claim), "root request %d: N1's claim", i)
		assert.Equal(t, "4,7,1,1,2", r.header.Get(_storm), "root request %d: N1's storm header", i)
	}
	assert.Equal(t, int64(2), n1.served.Load(), "served: N1")
	assert.Equal(t, int64(2), y.served.Load(), "served: ysvc")
	assert.Equal(t, int64(4), n2.served.Load(), "served: N2")
	assert.Equal(t, []ownership.Claim{ownership.ClaimClaimed, ownership.ClaimClaimed}, y.calleeClaims(), "ysvc read claims from N2")
	hs := n1.calleeHeaders()
	require.Len(t, hs, 2, "N1's callee's responses")
	for _, h := range hs {
		assert.Equal(t, "unclaimed", h.Get(_claim), "ysvc's claim")
	}
	want := inbound.Storm{Procedure: "/call", Known: true, Failed: true, Served: 4, Blind: 7, Prevented: 3, Retries: 1, Radius: 1, BlindRadius: 2}
	onset := want
	onset.Onset = true
	assert.Equal(t, []inbound.Storm{onset, want}, n1.rootStorms(t), "N1's root storms")
	// At the onset N1's call went unmarked: ysvc's first request was a
	// root too, of its own subtree (itself and N2 twice); after it, only
	// N1 is a root.
	assert.Equal(t, []inbound.Storm{{Procedure: _procedure, Known: true, Failed: true, Onset: true, Served: 3, Blind: 3, Retries: 1, Radius: 1, BlindRadius: 1}}, y.rootStorms(), "ysvc's root storms: the onset's only")
	assert.Equal(t, int64(2), n1.counter("retry.suppressed", map[string]string{"callee": "ysvc"}), "N1: retry.suppressed")
}

// The success path across the two: a yarpc service reads a net/http
// service's answer through yarpc's raw encoding, and nobody sends a
// claim. In the steady state nothing of errown's is on the wire; a caller
// in an incident marks its request, and the success then says its
// subtree served 2.
func TestYARPCCallsNetHTTPSuccess(t *testing.T) {
	n := startNode(t, nodeConfig{name: "N", errown: true, pattern: "POST /call"})
	y := startYARPC(t, "ysvc", "nsvc", n.url+_path, false)

	r := callYARPC(t, y)
	assert.Equal(t, http.StatusOK, r.status, "the yarpc service answered %d %q", r.status, r.body)
	assert.Equal(t, "ysvc>N", r.body, "the yarpc service's body")
	assert.Equal(t, http.Header{}, errownHeaders(r.header), "the yarpc service's success carries errown headers")
	hs := n.requestHeaders()
	require.Len(t, hs, 1, "N's requests")
	assert.Equal(t, http.Header{}, errownHeaders(hs[0]), "the yarpc service's call carries errown headers")

	r = callYARPC(t, y, _attempt, "1")
	assert.Equal(t, http.StatusOK, r.status, "marked: the yarpc service answered %d %q", r.status, r.body)
	assert.Equal(t, "ysvc>N", r.body, "marked: the yarpc service's body")
	assert.NotContains(t, r.header, _claim, "marked: a success carries a claim %q", r.header.Get(_claim))
	assert.Equal(t, "2,2,0,0,0", r.header.Get(_storm), "marked: storm header")
	hs = n.requestHeaders()
	require.Len(t, hs, 2, "N's requests")
	assert.Equal(t, "1", hs[1].Get(_attempt), "marked: the yarpc service's call's attempt header")
	assert.Empty(t, y.rootStorms(), "a success recorded root storms")
}
