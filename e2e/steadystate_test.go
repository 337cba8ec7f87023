package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown/errowntest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

// headerLog records every errown header a service received on a request
// (as its inbound transport delivered it) and every one its calls sent
// and got back (as its outbound transport took and gave them), as
// "caller>callee req name=value" and "caller<callee res name=value", a
// root key's value as "key". It is safe for concurrent use.
type headerLog struct {
	mu    sync.Mutex
	seen  []string
	roots map[string]bool // the root keys seen since the last take
}

func (l *headerLog) add(dir, caller, callee string, h transport.Headers) {
	var found []string
	for k, v := range h.Items() {
		if strings.HasPrefix(k, "errown-") {
			if k == "errown-root" {
				l.mu.Lock()
				if l.roots == nil {
					l.roots = make(map[string]bool)
				}
				l.roots[v] = true
				l.mu.Unlock()
				v = "key" // random: the root key, minted where the request entered the mesh
			}
			found = append(found, fmt.Sprintf("%s%s%s %s %s=%s", caller, dir, callee, _headerSide[dir], k, v))
		}
	}
	sort.Strings(found)
	l.mu.Lock()
	l.seen = append(l.seen, found...)
	l.mu.Unlock()
}

var _headerSide = map[string]string{">": "req", "<": "res"}

// take returns what was recorded since the last take, sorted.
func (l *headerLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen
	l.seen, l.roots = nil, nil
	sort.Strings(s)
	return s
}

// rootKeys returns how many root keys were seen since the last take.
func (l *headerLog) rootKeys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.roots)
}

// outboundTap records the headers of each attempt and its response.
type outboundTap struct{ log *headerLog }

var _ middleware.UnaryOutbound = outboundTap{}

func (o outboundTap) Call(ctx context.Context, req *transport.Request, out transport.UnaryOutbound) (*transport.Response, error) {
	o.log.add(">", req.Caller, req.Service, req.Headers)
	res, err := out.Call(ctx, req)
	if res != nil {
		o.log.add("<", req.Caller, req.Service, res.Headers)
	}
	return res, err
}

// inboundTap records the headers of each request a service receives.
type inboundTap struct{ log *headerLog }

var _ middleware.UnaryInbound = inboundTap{}

func (i inboundTap) Handle(ctx context.Context, req *transport.Request, resw transport.ResponseWriter, h transport.UnaryHandler) error {
	i.log.add(">", req.Caller, req.Service+"(in)", req.Headers)
	return h.Handle(ctx, req, resw)
}

// TestSteadyStateCarriesNoErrownHeader: on every transport, A→B→C with
// errown at every hop and a policy of two attempts: while C succeeds, no
// request and no response carries an errown header; once C fails, the
// failures carry the claim and the storm, and the calls of the
// procedures in the incident carry the attempt mark and the root key
// (one for the root request, at every hop), successes to them
// their figures, until a window after the last incident.
func TestSteadyStateCarriesNoErrownHeader(t *testing.T) {
	const window = 300 * time.Millisecond
	for _, tr := range _transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			log := new(headerLog)
			var down atomic.Bool
			leaf := func(ctx context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
				if down.Load() {
					return nil, yarpcerrors.UnavailableErrorf("%s is down", _c)
				}
				return body, nil
			}
			mesh := errowntest.NewMesh(t)
			start := func(name string, h errowntest.Handler, callees ...string) {
				cfg := withRetries(callees...)
				cfg.IncidentWindow = window
				mesh.Start(errowntest.ServiceConfig{
					Name: name, Transport: tr, Errown: cfg, Callees: callees, Handler: h,
					ExtraOutbound: outboundTap{log}, ExtraInbound: inboundTap{log},
				})
			}
			start(_c, leaf)
			start(_b, errowntest.Forward, _c)
			start(_a, errowntest.Forward, _b)
			call := func() errowntest.Reply {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				return mesh.Call(ctx, _a, []byte("x"))
			}

			for range 5 {
				require.NoError(t, call().Err)
			}
			assert.Empty(t, log.take(), "the steady state: nothing of errown's on any request or response")

			down.Store(true)
			r := call()
			require.Error(t, r.Err)
			assert.Equal(t, []string{
				"svc-a<svc-b res errown-claim=unclaimed",
				"svc-a<svc-b res errown-storm=3,3,1,1,1",
				"svc-b<svc-c res errown-claim=claimed",
				"svc-b<svc-c res errown-claim=claimed",
				"svc-b<svc-c res errown-storm=1,1,0,0,0",
				"svc-b<svc-c res errown-storm=1,1,0,0,0",
				"svc-b>svc-c req errown-attempt=2",
				"svc-b>svc-c(in) req errown-attempt=2",
			}, log.take(), "the onset: first attempts unmarked, the retry numbered, the failures' claims and storms")

			r = call()
			require.Error(t, r.Err)
			assert.Equal(t, []string{
				"svc-a<svc-b res errown-claim=unclaimed",
				"svc-a<svc-b res errown-storm=3,3,1,1,1",
				"svc-a>svc-b req errown-attempt=1",
				"svc-a>svc-b req errown-root=key",
				"svc-a>svc-b(in) req errown-attempt=1",
				"svc-a>svc-b(in) req errown-root=key",
				"svc-b<svc-c res errown-claim=claimed",
				"svc-b<svc-c res errown-claim=claimed",
				"svc-b<svc-c res errown-storm=1,1,0,0,0",
				"svc-b<svc-c res errown-storm=1,1,0,0,0",
				"svc-b>svc-c req errown-attempt=1",
				"svc-b>svc-c req errown-attempt=2",
				"svc-b>svc-c req errown-root=key",
				"svc-b>svc-c req errown-root=key",
				"svc-b>svc-c(in) req errown-attempt=1",
				"svc-b>svc-c(in) req errown-attempt=2",
				"svc-b>svc-c(in) req errown-root=key",
				"svc-b>svc-c(in) req errown-root=key",
			}, func() []string {
				assert.Equal(t, 1, log.rootKeys(), "one root key, minted at A, on every call of the root request")
				return log.take()
			}(), "in the incident: every call marked, with its root key")

			down.Store(false)
			require.NoError(t, call().Err)
			assert.Equal(t, []string{
				"svc-a<svc-b res errown-storm=2,2,0,0,0",
				"svc-a>svc-b req errown-attempt=1",
				"svc-a>svc-b req errown-root=key",
				"svc-a>svc-b(in) req errown-attempt=1",
				"svc-a>svc-b(in) req errown-root=key",
				"svc-b>svc-c req errown-attempt=1",
				"svc-b>svc-c req errown-root=key",
				"svc-b>svc-c(in) req errown-attempt=1",
				"svc-b>svc-c(in) req errown-root=key",
			}, log.take(), "within the window after it: marked, and B's success says what it took")

			time.Sleep(window + 100*time.Millisecond)
			require.NoError(t, call().Err)
			assert.Empty(t, log.take(), "a window after the incident: the steady state again")
		})
	}
}
