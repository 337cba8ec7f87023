package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/yarpcerrors"
)

const (
	_claimed   = "claimed"
	_unclaimed = "unclaimed"
	_missing   = "" // no claim header on the response
	_outside   = errowntest.OutsideCaller
	_unavail   = yarpcerrors.CodeUnavailable
)

// scenario is one row of a table run over every transport: the transport
// to give the whole mesh and the result wanted.
type scenario struct {
	give string
	want result
}

// everyTransport runs the same expectation over HTTP, gRPC and TChannel.
func everyTransport(want result) []scenario {
	return []scenario{
		{give: errowntest.HTTP, want: want},
		{give: errowntest.GRPC, want: want},
		{give: errowntest.TChannel, want: want},
	}
}

// A→B→C, C fails every call: C claims, B retries C once and returns
// unclaimed, A does not retry B.
func TestOwnerFailing(t *testing.T) {
	tests := everyTransport(result{
		Code:   _unavail,
		Claim:  _unclaimed,
		Served: map[string]int64{_a: 1, _b: 1, _c: 2},
		Attempts: []string{
			attempt(_b, _c, 1, _claimed),
			attempt(_b, _c, 2, _claimed),
			attempt(_a, _b, 1, _unclaimed),
			attempt(_outside, _a, 1, _unclaimed),
		},
	})
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tt.give, Errown: withRetries(), Handler: fail(_c)})
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tt.give, Errown: withRetries(_c), Callees: []string{_c}, Handler: errowntest.Forward})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tt.give, Errown: withRetries(_b), Callees: []string{_b}, Handler: errowntest.Forward})

			reply := mesh.Call(callCtx(t), _a, nil)

			assertResult(t, tt.want, observe(mesh, reply, _a, _b, _c))
		})
	}
}

// A→B→C with C a plain yarpc service (mixed deployment): C's error has no
// claim, B retries it once and returns unclaimed, A does not retry.
func TestCalleeWithoutErrown(t *testing.T) {
	tests := everyTransport(result{
		Code:   _unavail,
		Claim:  _unclaimed,
		Served: map[string]int64{_a: 1, _b: 1, _c: 2},
		Attempts: []string{
			attempt(_b, _c, 1, _missing),
			attempt(_b, _c, 2, _missing),
			attempt(_a, _b, 1, _unclaimed),
			attempt(_outside, _a, 1, _unclaimed),
		},
	})
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tt.give, Errown: nil, Handler: fail(_c)})
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tt.give, Errown: withRetries(_c), Callees: []string{_c}, Handler: errowntest.Forward})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tt.give, Errown: withRetries(_b), Callees: []string{_b}, Handler: errowntest.Forward})

			reply := mesh.Call(callCtx(t), _a, nil)

			assertResult(t, tt.want, observe(mesh, reply, _a, _b, _c))
		})
	}
}

// A(policy)→B→C→D, D fails, only A has a retry policy: nobody below
// retried, so RCS stays false and B and C keep the error claimed; A
// retries B once (at least once holds) and returns unclaimed.
func TestOnlyRootRetries(t *testing.T) {
	round := []string{
		attempt(_c, _d, 1, _claimed),
		attempt(_b, _c, 1, _claimed),
	}
	tests := everyTransport(result{
		Code:   _unavail,
		Claim:  _unclaimed,
		Served: map[string]int64{_a: 1, _b: 2, _c: 2, _d: 2},
		Attempts: concat(
			round, []string{attempt(_a, _b, 1, _claimed)},
			round, []string{attempt(_a, _b, 2, _claimed)},
			[]string{attempt(_outside, _a, 1, _unclaimed)},
		),
	})
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _d, Transport: tt.give, Errown: &errown.Config{}, Handler: fail(_d)})
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tt.give, Errown: &errown.Config{}, Callees: []string{_d}, Handler: errowntest.Forward})
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tt.give, Errown: &errown.Config{}, Callees: []string{_c}, Handler: errowntest.Forward})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tt.give, Errown: withRetries(_b), Callees: []string{_b}, Handler: errowntest.Forward})

			reply := mesh.Call(callCtx(t), _a, nil)

			assertResult(t, tt.want, observe(mesh, reply, _a, _b, _c, _d))
		})
	}
}

// dropContext passes its callees' errors through, but calls them with a
// fresh context instead of its own: errown cannot tie those calls to the
// request being served.
func dropContext(_ context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
	fresh, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errowntest.Forward(fresh, c, body)
}

// meshKind builds a chain with or without ownership.
type meshKind struct {
	// errown returns the errown config of a node calling callees.
	errown func(callees ...string) *errown.Config
	// extra returns the middleware a node runs on its outbound calls
	// besides errown.
	extra func(t *testing.T, callees ...string) middleware.UnaryOutbound
}

var (
	// owned: errown with a retry policy on every edge.
	owned = meshKind{
		errown: withRetries,
		extra:  func(*testing.T, ...string) middleware.UnaryOutbound { return nil },
	}
	// unowned: the same retry policies, as plain retry middleware
	// without errown: every hop retries.
	unowned = meshKind{
		errown: func(...string) *errown.Config { return nil },
		extra: func(t *testing.T, callees ...string) middleware.UnaryOutbound {
			return plainRetry(t, callees...)
		},
	}
)

// A→B→C→D, all with retry policies, D fails, C drops its context when it
// calls D. C cannot correlate D's failure and claims; B retries C and
// unclaims; A does not retry. D serves 4, against 8 for the same chain
// with retries and no ownership: the storm stays within two hops.
func TestContextDropped(t *testing.T) {
	cd := []string{attempt(_c, _d, 1, _claimed), attempt(_c, _d, 2, _claimed)}
	ownedWant := result{
		Code:   _unavail,
		Claim:  _unclaimed,
		Served: map[string]int64{_a: 1, _b: 1, _c: 2, _d: 4},
		Attempts: concat(
			cd, []string{attempt(_b, _c, 1, _claimed)},
			cd, []string{attempt(_b, _c, 2, _claimed)},
			[]string{attempt(_a, _b, 1, _unclaimed), attempt(_outside, _a, 1, _unclaimed)},
		),
	}
	plainCD := []string{attempt(_c, _d, 1, _missing), attempt(_c, _d, 2, _missing)}
	plainBC := concat(plainCD, []string{attempt(_b, _c, 1, _missing)}, plainCD, []string{attempt(_b, _c, 2, _missing)})
	unownedWant := result{
		Code:   _unavail,
		Claim:  _missing,
		Served: map[string]int64{_a: 1, _b: 2, _c: 4, _d: 8},
		Attempts: concat(
			plainBC, []string{attempt(_a, _b, 1, _missing)},
			plainBC, []string{attempt(_a, _b, 2, _missing)},
			[]string{attempt(_outside, _a, 1, _missing)},
		),
	}
	tests := []struct {
		name string
		give chainGive
		want result
	}{
		{name: "http/errown", give: chainGive{errowntest.HTTP, owned}, want: ownedWant},
		{name: "grpc/errown", give: chainGive{errowntest.GRPC, owned}, want: ownedWant},
		{name: "tchannel/errown", give: chainGive{errowntest.TChannel, owned}, want: ownedWant},
		{name: "http/no-ownership", give: chainGive{errowntest.HTTP, unowned}, want: unownedWant},
		{name: "grpc/no-ownership", give: chainGive{errowntest.GRPC, unowned}, want: unownedWant},
		{name: "tchannel/no-ownership", give: chainGive{errowntest.TChannel, unowned}, want: unownedWant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, k := tt.give.transport, tt.give.kind
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _d, Transport: tr, Errown: k.errown(), ExtraOutbound: k.extra(t), Handler: fail(_d)})
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Errown: k.errown(_d), ExtraOutbound: k.extra(t, _d), Callees: []string{_d}, Handler: dropContext})
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tr, Errown: k.errown(_c), ExtraOutbound: k.extra(t, _c), Callees: []string{_c}, Handler: errowntest.Forward})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tr, Errown: k.errown(_b), ExtraOutbound: k.extra(t, _b), Callees: []string{_b}, Handler: errowntest.Forward})

			reply := mesh.Call(callCtx(t), _a, nil)

			assertResult(t, tt.want, observe(mesh, reply, _a, _b, _c, _d))
		})
	}
}

// chainGive is the transport of a whole chain and how it retries.
type chainGive struct {
	transport string
	kind      meshKind
}

// edgeGive is the transport of a whole mesh and B's declared dependencies.
type edgeGive struct {
	transport string
	deps      []depmem.Declaration
}

// B calls C, which fails, then fails on its own. Declared fail-open, C's
// failure is coincidental: B claims and A retries B. Undeclared, the edge
// is unknown and counts as correlated: B unclaims and A does not retry.
func TestFailOpenEdge(t *testing.T) {
	failOpen := []depmem.Declaration{{Service: _c, Kind: new(ownership.KindFailOpen)}}
	bc := []string{attempt(_b, _c, 1, _claimed), attempt(_b, _c, 2, _claimed)}
	declared := result{
		Code:   _unavail,
		Claim:  _unclaimed,
		Served: map[string]int64{_a: 1, _b: 2, _c: 4},
		Attempts: concat(
			bc, []string{attempt(_a, _b, 1, _claimed)},
			bc, []string{attempt(_a, _b, 2, _claimed)},
			[]string{attempt(_outside, _a, 1, _unclaimed)},
		),
	}
	undeclared := result{
		Code:   _unavail,
		Claim:  _unclaimed,
		Served: map[string]int64{_a: 1, _b: 1, _c: 2},
		Attempts: concat(
			bc, []string{attempt(_a, _b, 1, _unclaimed), attempt(_outside, _a, 1, _unclaimed)},
		),
	}
	tests := []struct {
		name string
		give edgeGive
		want result
	}{
		{name: "http/fail-open", give: edgeGive{errowntest.HTTP, failOpen}, want: declared},
		{name: "grpc/fail-open", give: edgeGive{errowntest.GRPC, failOpen}, want: declared},
		{name: "tchannel/fail-open", give: edgeGive{errowntest.TChannel, failOpen}, want: declared},
		{name: "http/undeclared", give: edgeGive{errowntest.HTTP, nil}, want: undeclared},
		{name: "grpc/undeclared", give: edgeGive{errowntest.GRPC, nil}, want: undeclared},
		{name: "tchannel/undeclared", give: edgeGive{errowntest.TChannel, nil}, want: undeclared},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := tt.give.transport
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _c, Transport: tr, Errown: withRetries(), Handler: fail(_c)})
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tr, Errown: withDeps(tt.give.deps, _c), Callees: []string{_c}, Handler: fail(_b)})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tr, Errown: withRetries(_b), Callees: []string{_b}, Handler: errowntest.Forward})

			reply := mesh.Call(callCtx(t), _a, nil)

			assertResult(t, tt.want, observe(mesh, reply, _a, _b, _c))
		})
	}
}

// forge forwards to its callees with a claim header on the request, as if
// it could tell them to unclaim.
func forge(ctx context.Context, c *errowntest.Client, body []byte) ([]byte, error) {
	for _, s := range c.Callees() {
		if _, err := c.Call(ctx, s, body, yarpc.WithHeader("errown-claim", _unclaimed)); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// A claim header on a request means nothing. The outside caller sends
// "unclaimed" to B, which fails on its own: B still claims. A sends
// "unclaimed" to B: B still claims, so A retries it.
func TestClaimOnRequestIgnored(t *testing.T) {
	tests := everyTransport(result{
		Code:   _unavail,
		Claim:  _unclaimed,
		Served: map[string]int64{_a: 1, _b: 3},
		Attempts: []string{
			attempt(_outside, _b, 1, _claimed),
			attempt(_a, _b, 1, _claimed),
			attempt(_a, _b, 2, _claimed),
			attempt(_outside, _a, 1, _unclaimed),
		},
	})
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			t.Parallel()
			mesh := errowntest.NewMesh(t)
			mesh.Start(errowntest.ServiceConfig{Name: _b, Transport: tt.give, Errown: withRetries(), Handler: fail(_b)})
			mesh.Start(errowntest.ServiceConfig{Name: _a, Transport: tt.give, Errown: withRetries(_b), Callees: []string{_b}, Handler: forge})

			direct := mesh.Call(callCtx(t), _b, nil, yarpc.WithHeader("errown-claim", _unclaimed))
			assert.Equal(t, _claimed, direct.Claim, "B called directly with a forged claim")
			reply := mesh.Call(callCtx(t), _a, nil, yarpc.WithHeader("errown-claim", _unclaimed))

			assertResult(t, tt.want, observe(mesh, reply, _a, _b))
		})
	}
}
