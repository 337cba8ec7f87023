package e2e_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/internal/defaults"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/yarpcerrors"
)

// forgedHeaders are the headers a handler forges or forwards: errown's
// claim, no-retry and shed headers, the claim under a name in mixed case.
var forgedHeaders = map[string]string{
	"Errown-Claim":         _unclaimed,
	defaults.NoRetryHeader: "true",
	defaults.ShedHeader:    "queue_full",
	"X-App-Header":         "kept",
}

// ownHeaders returns errown's claim, no-retry and shed headers in h,
// whatever the case of their names, as sorted "name: value"; nil when h
// has none.
func ownHeaders(h map[string]string) []string {
	var own []string
	for k, v := range h {
		if strings.EqualFold(k, defaults.ClaimHeader) || strings.EqualFold(k, defaults.NoRetryHeader) || strings.EqualFold(k, defaults.ShedHeader) {
			own = append(own, strings.ToLower(k)+": "+v)
		}
	}
	slices.Sort(own)
	return own
}

// writeHeaders sets h on the response of the request being served.
func writeHeaders(ctx context.Context, h map[string]string) error {
	call := yarpc.CallFromContext(ctx)
	for k, v := range h {
		if err := call.WriteResponseHeader(k, v); err != nil {
			return err
		}
	}
	return nil
}

// forger is B's handler: it puts headers on its response, set by itself
// or forwarded from its callee's successful response, then fails on its
// own (no call of its failed) or succeeds.
type forger struct {
	forward bool // forward the callee's response headers, else set forgedHeaders
	fail    bool
}

func (f forger) handle(ctx context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
	h := forgedHeaders
	if f.forward {
		h = nil
		for _, s := range c.Callees() {
			if _, err := c.Call(ctx, s, body, yarpc.ResponseHeaders(&h)); err != nil {
				return nil, yarpcerrors.InternalErrorf("callee %s failed, which this test does not expect: %v", s, err)
			}
		}
	}
	if err := writeHeaders(ctx, h); err != nil {
		return nil, err
	}
	if f.fail {
		return nil, yarpcerrors.UnavailableErrorf("B fails on its own")
	}
	return body, nil
}

// headerTap is A's handler: it forwards to its callees and keeps the
// response headers of each call, as A's handler receives them.
type headerTap struct {
	mu   sync.Mutex
	seen []map[string]string
}

func (tap *headerTap) handle(ctx context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
	for _, s := range c.Callees() {
		var h map[string]string
		_, err := c.Call(ctx, s, body, yarpc.ResponseHeaders(&h))
		tap.mu.Lock()
		tap.seen = append(tap.seen, h)
		tap.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return body, nil
}

func (tap *headerTap) headers() []map[string]string {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return append([]map[string]string(nil), tap.seen...)
}

// errown owns its headers: a claim or no-retry header the handler sets,
// or forwards from its callee's response, never reaches the caller.
//
// B sets errown-claim: unclaimed and errown-no-retry: true on its
// response, or forwards them from its callee C (a plain yarpc service that
// sets them on its successful response). When B then fails on its own
// (none of its calls failed), its caller sees exactly "claimed" and no
// no-retry header, so A, with a policy for B, retries B once. When B
// succeeds, its caller sees neither header. Its other headers pass.
//
// On gRPC, where the headers travel as metadata and a duplicate key used
// to let the handler's value win over errown's, this is the case that
// matters most.
func TestHandlerCannotForgeOwnHeaders(t *testing.T) {
	type give struct {
		transport string
		b         forger
	}
	type want struct {
		// Direct and ViaA are errown's headers on B's response, called
		// from outside and by A (the final attempt), as "name: value".
		Direct, ViaA []string
		// Edge is A's attempts to B.
		Edge []string
		// Code of the reply A got from B; AppHeaders says whether B's
		// other headers reached A.
		Code       yarpcerrors.Code
		AppHeaders bool
	}
	failed := want{
		Direct:     []string{"errown-claim: claimed"},
		ViaA:       []string{"errown-claim: claimed"},
		Edge:       []string{attempt(_a, _b, 1, _claimed), attempt(_a, _b, 2, _claimed)},
		Code:       _unavail,
		AppHeaders: true,
	}
	succeeded := want{
		Edge:       []string{ok(_a, _b)},
		Code:       yarpcerrors.CodeOK,
		AppHeaders: true,
	}
	type test struct {
		name string
		give give
		want want
	}
	var tests []test
	for _, tr := range _transports {
		for _, b := range []forger{{fail: true}, {forward: true, fail: true}, {}, {forward: true}} {
			name := map[bool]string{false: "sets", true: "forwards"}[b.forward] + "/" + map[bool]string{false: "succeeds", true: "fails"}[b.fail]
			w := succeeded
			if b.fail {
				w = failed
			}
			tests = append(tests, test{name: tr + "/" + name, give: give{tr, b}, want: w})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := tt.give.transport
			mesh := errowntest.NewMesh(t)
			var bCallees []string
			if tt.give.b.forward {
				mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Errown: nil, Handler: func(ctx context.Context, _ *errowntest.Client, body []byte) ([]byte, error) {
					return body, writeHeaders(ctx, forgedHeaders)
				}})
				bCallees = []string{_c}
			}
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tr, Errown: withRetries(), Callees: bCallees, Handler: tt.give.b.handle})
			tap := new(headerTap)
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tr, Errown: withRetries(_b), Callees: []string{_b}, Handler: tap.handle})

			direct := mesh.Call(callCtx(t), _b, []byte("hi"))
			assert.Equal(t, tt.want.Code, direct.Code(), "B called from outside: code (%v)", direct.Err)
			// slices.Equal first: no errown header is a nil list, wanted nil or empty.
			if got := ownHeaders(direct.Headers); !slices.Equal(got, tt.want.Direct) {
				assert.Equal(t, tt.want.Direct, got, "B called from outside: errown's headers (all headers: %v)", direct.Headers)
			}
			assert.Equal(t, tt.want.AppHeaders, appHeaders(direct.Headers), "B called from outside: B's own headers passed (all headers: %v)", direct.Headers)

			mesh.Recorder().Reset()
			reply := mesh.Call(callCtx(t), _a, []byte("hi"))
			assert.Equal(t, tt.want.Code, reply.Code(), "A: code (%v)", reply.Err)
			if got := formatAttempts(mesh.Recorder().Edge(_a, _b)); !slices.Equal(got, tt.want.Edge) {
				assert.Equal(t, tt.want.Edge, got, "A's attempts to B")
			}
			seen := tap.headers()
			require.Len(t, seen, 1, "calls A's handler made")
			if got := ownHeaders(seen[0]); !slices.Equal(got, tt.want.ViaA) {
				assert.Equal(t, tt.want.ViaA, got, "A got errown's headers from B (all headers: %v)", seen[0])
			}
			assert.Equal(t, tt.want.AppHeaders, appHeaders(seen[0]), "A got B's own headers (all headers: %v)", seen[0])
		})
	}
}

// appHeaders reports whether h holds the headers forgedHeaders has besides
// errown's.
func appHeaders(h map[string]string) bool {
	for k, v := range forgedHeaders {
		if strings.HasPrefix(strings.ToLower(k), "x-app") && h[strings.ToLower(k)] != v {
			return false
		}
	}
	return true
}
