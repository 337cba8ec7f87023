package nethttp_test

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	yhttp "go.uber.org/yarpc/transport/http"
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
	mw := newMiddleware(t, policyConfig(callee, retry.ModeEnforce), s.scope, s.hook)
	tr := yhttp.NewTransport()
	in := tr.NewInbound("127.0.0.1:0")
	cfg := yarpc.Config{Name: name, Inbounds: yarpc.Inbounds{in}}
	if callee != "" {
		cfg.Outbounds = yarpc.Outbounds{callee: {Unary: tr.NewSingleOutbound(calleeURL)}}
	}
	d := yarpc.NewDispatcher(mw.Apply(cfg))
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
	if err := d.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stop %s: %v", name, err)
		}
	})
	s.addr = in.Addr().String()
	return s
}

func (s *yarpcService) hook(st inbound.Storm) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storms = append(s.storms, st)
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
// errown: it is a root.
func callYARPC(t *testing.T, s *yarpcService) reply {
	t.Helper()
	h := http.Header{}
	for k, v := range map[string]string{"Rpc-Caller": "outside", "Rpc-Service": s.name, "Rpc-Procedure": _procedure, "Rpc-Encoding": "raw", "Context-TTL-MS": "10000"} {
		h.Set(k, v)
	}
	return do(t, http.MethodPost, "http://"+s.addr+"/", strings.NewReader("hi"), h)
}

// startNetHTTPCallingYARPC starts a net/http service under errown whose
// POST /call calls the yarpc service y (a policy of two attempts for it),
// named by the request's Rpc-Service header, and answers with y's status.
func startNetHTTPCallingYARPC(t *testing.T, name string, y *yarpcService) *node {
	t.Helper()
	n := &node{name: name, scope: tally.NewTestScope("", nil)}
	n.mw = newMiddleware(t, policyConfig(y.name, retry.ModeEnforce), n.scope, n.hook)
	client := &http.Client{Transport: nethttp.Transport(n.mw, newBase(t))} // the callee named by Rpc-Service
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
	srv := newServer(t, nethttp.Handler(n.mw, mux))
	n.url = srv
	return n
}

// A yarpc service calls a net/http service that fails: the yarpc caller
// reads the net/http service's claim (claimed), retries it once, and
// answers its own caller unclaimed.
func TestYARPCCallsNetHTTP(t *testing.T) {
	n := startNode(t, nodeConfig{name: "N", errown: true, pattern: "POST /call", fail: http.StatusServiceUnavailable})
	y := startYARPC(t, "ysvc", "nsvc", n.url+_path, false)

	r := callYARPC(t, y)
	if r.status != http.StatusServiceUnavailable || r.header.Get(_claim) != "unclaimed" {
		t.Errorf("the yarpc service answered %d, claim %q; want 503 unclaimed", r.status, r.header.Get(_claim))
	}
	if want, got := []ownership.Claim{ownership.ClaimClaimed}, y.calleeClaims(); !reflect.DeepEqual(got, want) {
		t.Errorf("the yarpc service read claims %v from the net/http service, want %v", got, want)
	}
	if y.served.Load() != 1 || n.served.Load() != 2 {
		t.Errorf("served: yarpc %d, net/http %d; want 1 and 2", y.served.Load(), n.served.Load())
	}
	if got := n.counter("inbound.claimed", nil); got != 2 {
		t.Errorf("net/http service: inbound.claimed: got %d, want 2", got)
	}
}

// A net/http service calls a yarpc service that fails: the net/http
// service reads the yarpc service's claim, retries once and answers its
// own caller unclaimed.
func TestNetHTTPCallsYARPC(t *testing.T) {
	y := startYARPC(t, "ysvc", "", "", true)
	n := startNetHTTPCallingYARPC(t, "N", y)

	r := get(t, n.url)
	if r.status != http.StatusServiceUnavailable || r.header.Get(_claim) != "unclaimed" {
		t.Errorf("the net/http service answered %d %q, claim %q; want 503 unclaimed", r.status, r.body, r.header.Get(_claim))
	}
	for _, h := range n.calleeHeaders() {
		if got := h.Get(_claim); got != "claimed" {
			t.Errorf("the yarpc service's claim: got %q, want claimed", got)
		}
	}
	if y.served.Load() != 2 || n.served.Load() != 1 {
		t.Errorf("served: yarpc %d, net/http %d; want 2 and 1", y.served.Load(), n.served.Load())
	}
	if got := n.counter("retry.attempts", map[string]string{"callee": "ysvc"}); got != 1 {
		t.Errorf("net/http service: retry.attempts: got %d, want 1", got)
	}
}

// A mixed chain, net/http → yarpc → net/http, the last failing: only the
// yarpc service, next to the failure, retries; the root's storm figures
// are those of the README's example mesh, 4 served, 7 blind.
func TestMixedChain(t *testing.T) {
	n2 := startNode(t, nodeConfig{name: "N2", errown: true, pattern: "POST /call", fail: http.StatusServiceUnavailable})
	y := startYARPC(t, "ysvc", "n2", n2.url+_path, false)
	n1 := startNetHTTPCallingYARPC(t, "N1", y)

	r := get(t, n1.url)
	if r.status != http.StatusServiceUnavailable || r.header.Get(_claim) != "unclaimed" {
		t.Errorf("N1 answered %d, claim %q; want 503 unclaimed", r.status, r.header.Get(_claim))
	}
	if got := r.header.Get(_storm); got != "4,7,1,1,2" {
		t.Errorf("N1's storm header: got %q, want 4,7,1,1,2", got)
	}
	if n1.served.Load() != 1 || y.served.Load() != 1 || n2.served.Load() != 2 {
		t.Errorf("served: N1 %d, ysvc %d, N2 %d; want 1, 1, 2", n1.served.Load(), y.served.Load(), n2.served.Load())
	}
	if got := y.calleeClaims(); !reflect.DeepEqual(got, []ownership.Claim{ownership.ClaimClaimed}) {
		t.Errorf("ysvc read claims %v from N2, want [claimed]", got)
	}
	for _, h := range n1.calleeHeaders() {
		if got := h.Get(_claim); got != "unclaimed" {
			t.Errorf("ysvc's claim: got %q, want unclaimed", got)
		}
	}
	want := []inbound.Storm{{Procedure: "/call", Known: true, Failed: true, Served: 4, Blind: 7, Prevented: 3, Retries: 1, Radius: 1, BlindRadius: 2}}
	if got := n1.rootStorms(t); !reflect.DeepEqual(got, want) {
		t.Errorf("N1's root storms: got %+v, want %+v", got, want)
	}
	if got := n1.counter("retry.suppressed", map[string]string{"callee": "ysvc"}); got != 1 {
		t.Errorf("N1: retry.suppressed: got %d, want 1", got)
	}
}

// The success path across the two: a yarpc service reads a net/http
// service's answer through yarpc's raw encoding, and nobody sends a
// claim.
func TestYARPCCallsNetHTTPSuccess(t *testing.T) {
	n := startNode(t, nodeConfig{name: "N", errown: true, pattern: "POST /call"})
	y := startYARPC(t, "ysvc", "nsvc", n.url+_path, false)

	r := callYARPC(t, y)
	if r.status != http.StatusOK || r.body != "ysvc>N" {
		t.Errorf("the yarpc service answered %d %q, want 200 ysvc>N", r.status, r.body)
	}
	if v, ok := r.header[_claim]; ok {
		t.Errorf("a success carries a claim %q", v)
	}
	if got := r.header.Get(_storm); got != "2,2,0,0,0" {
		t.Errorf("storm header: got %q, want 2,2,0,0,0", got)
	}
}
