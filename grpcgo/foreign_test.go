package grpcgo_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// _grpcRetry4 is a service config under which grpc-go itself retries
// Health/Check up to four attempts on unavailable.
const _grpcRetry4 = `{"methodConfig": [{
	"name": [{"service": "grpc.health.v1.Health"}],
	"retryPolicy": {
		"maxAttempts": 4,
		"initialBackoff": "0.001s",
		"maxBackoff": "0.001s",
		"backoffMultiplier": 1,
		"retryableStatusCodes": ["UNAVAILABLE"]
	}
}]}`

// retryOnce is an application's own blind retry interceptor: a call that
// failed is sent once more, whatever its error says.
func retryOnce(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if err := invoker(ctx, method, req, reply, cc, opts...); err == nil {
		return nil
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// bufferRetries is an application's interceptor that gives grpc-go room
// to buffer the request for its own retries, undoing errown's commit of
// each call to its first attempt (grpc.MaxRetryRPCBufferSize(0)).
func bufferRetries(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(ctx, method, req, reply, cc, append(opts, grpc.MaxRetryRPCBufferSize(1<<20))...)
}

// Retries errown does not own, on grpc-go: at every hop of A→B→C→D, D
// failing every call, the ClientConn keeps grpc-go's own retryPolicy in
// its service config (four attempts on unavailable, no DialOptions to
// turn it off) and the application chains its own blind retry
// interceptor (retryOnce) inside errown's. errown's AttemptsInterceptor,
// last, holds them to errown's rules, as retrier.Attempts does on yarpc
// (e2e: TestForeignRetriesHeldToErrownsRules):
//
//   - C→D: errown's first attempt fails (D claims); retryOnce sends it
//     again, which the policy (two attempts) allows: D serves 2. errown's
//     own retry is then out of attempts; C's error is unclaimed.
//   - B→C: C's error is unclaimed; retryOnce's replay is refused before
//     it leaves B (retry.denied reason foreign-unclaimed), retryOnce gets
//     C's error back, errown suppresses its own retry: C serves 1.
//   - A→B likewise: B serves 1.
//   - grpc-go's own retries never run: errown commits each attempt to
//     grpc-go's first try.
//
// Without AttemptsInterceptor, D serves 16 per root request.
func TestForeignRetriesHeldToErrownsRules(t *testing.T) {
	enforced := map[string]int64{_a: 1, _b: 1, _c: 1, _d: 2}
	for _, tt := range []struct {
		name     string
		bare     bool
		attempts bool
		served   map[string]int64
	}{
		{"interceptors chained by hand", true, true, enforced},
		{"DialOptions WithInnerInterceptors", false, false, enforced},
		{"control: no AttemptsInterceptor", true, false, map[string]int64{_a: 1, _b: 2, _c: 4, _d: 16}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := func(name string, callee *node, w work) *node {
				cfg := nodeConfig{name: name, errown: noPolicy(), work: w}
				if callee != nil {
					cfg.errown, cfg.callee = retrying(callee.name), callee
					cfg.bare, cfg.attempts = tt.bare, tt.attempts
					cfg.inner = []grpc.UnaryClientInterceptor{retryOnce}
					cfg.dialOptions = []grpc.DialOption{grpc.WithDefaultServiceConfig(_grpcRetry4)}
				}
				return startGRPC(t, cfg)
			}
			d := start(_d, nil, failWith(codes.Unavailable))
			c := start(_c, d, nil)
			b := start(_b, c, nil)
			a := start(_a, b, nil)
			ch := chain{a, b, c, d}
			for i := range _roots {
				before := served(ch.nodes()...)
				r := callRoot(t, a)
				got := served(ch.nodes()...)
				for k := range got {
					got[k] -= before[k]
				}
				assert.Equal(t, tt.served, got, "root request %d: served", i)
				assert.Equal(t, codes.Unavailable, r.code, "root request %d: root code (trailer %v)", i, r.trailer)
				assert.Equal(t, _unclaimed, r.get(_claimHeader), "root request %d: root claim (trailer %v)", i, r.trailer)
				if !tt.attempts && tt.bare {
					continue
				}
				// The root's figures count every attempt that left a
				// process: 5 served, one retry, radius 1.
				st := wire.ParseStorm(r.get(_stormHeader))
				assert.True(t, st.Known, "root request %d: storm %q does not parse", i, r.get(_stormHeader))
				assert.Equal(t, uint64(5), st.Storm.Served, "root request %d: storm %q, served", i, r.get(_stormHeader))
				assert.Equal(t, uint64(1), st.Storm.Retries, "root request %d: storm %q, retries", i, r.get(_stormHeader))
				assert.Equal(t, uint8(1), st.Storm.Radius, "root request %d: storm %q, radius", i, r.get(_stormHeader))
			}
			if !tt.attempts && tt.bare {
				return
			}
			for _, h := range []struct {
				caller  *node
				callee  string
				counter string
				tags    map[string]string
				want    int64
			}{
				{c, _d, "foreign_attempts", nil, 1},
				{c, _d, "attempts", nil, 0}, // errown's own retry had no attempt left
				{b, _c, "denied", map[string]string{"reason": "foreign-unclaimed"}, 1},
				{b, _c, "suppressed", nil, 1},
				{b, _c, "foreign_attempts", nil, 0},
				{a, _b, "denied", map[string]string{"reason": "foreign-unclaimed"}, 1},
				{a, _b, "suppressed", nil, 1},
			} {
				tags := map[string]string{"callee": h.callee}
				maps.Copy(tags, h.tags)
				assert.Equal(t, h.want*_roots, h.caller.counter("retry."+h.counter, tags), "%s's retry.%s%v", h.caller.name, h.counter, tags)
			}
			// Each hop's egress log counts the attempts that left it.
			assert.Equal(t, int64(_roots), c.counter("egress.failures", map[string]string{"claim": _claimed}), "C's egress.failures{claim=claimed}")
		})
	}
}

// attemptCounter is a stats.Handler that counts the attempts grpc-go
// begins, each a Begin event, those it retries transparently apart.
type attemptCounter struct {
	attempts, transparent atomic.Int64
}

func (h *attemptCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (h *attemptCounter) HandleRPC(_ context.Context, s stats.RPCStats) {
	if b, ok := s.(*stats.Begin); ok {
		h.attempts.Add(1)
		if b.IsTransparentRetryAttempt {
			h.transparent.Add(1)
		}
	}
}
func (h *attemptCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (h *attemptCounter) HandleConn(context.Context, stats.ConnStats) {}

// grpc-go's own retryPolicy, left on in the ClientConn's service config
// (four attempts on unavailable) under errown's interceptor alone, with no
// DialOptions: the callee serves at most errown's two attempts per call,
// since errown commits each attempt to grpc-go's first try
// (grpc.MaxRetryRPCBufferSize(0)); an application's interceptor between
// that undoes the commit is undone in turn by AttemptsInterceptor, last.
// With WithGRPCRetries grpc-go's retries run below every interceptor,
// blind to claims: a stats.Handler sees them, errown does not (pinned).
func TestGRPCServiceConfigRetriesHeld(t *testing.T) {
	for _, tt := range []struct {
		name      string
		unclaimed bool // C's error says unclaimed
		inner     []grpc.UnaryClientInterceptor
		attempts  bool
		opts      []grpcgo.Option
		served    int64
	}{
		{name: "interceptor alone", served: 2},
		{name: "interceptor alone, unclaimed", unclaimed: true, served: 1},
		{name: "an interceptor between buffers, AttemptsInterceptor commits", inner: []grpc.UnaryClientInterceptor{bufferRetries}, attempts: true, served: 2},
		{name: "control: an interceptor between buffers", inner: []grpc.UnaryClientInterceptor{bufferRetries}, served: 8},
		{name: "WithGRPCRetries: blind", opts: []grpcgo.Option{grpcgo.WithGRPCRetries()}, served: 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := startGRPC(t, nodeConfig{name: _c, handler: func(ctx context.Context, _ *node) error {
				if tt.unclaimed {
					_ = grpc.SetTrailer(ctx, metadata.Pairs(_claimHeader, _unclaimed))
				}
				return status.Error(codes.Unavailable, "down")
			}}) // a plain grpc-go service: trailers only
			counter := new(attemptCounter)
			b := startGRPC(t, nodeConfig{
				name: _b, errown: retrying(_c), callee: c, bare: true,
				inner: tt.inner, attempts: tt.attempts, clientOptions: tt.opts,
				dialOptions: []grpc.DialOption{grpc.WithDefaultServiceConfig(_grpcRetry4), grpc.WithStatsHandler(counter)},
			})
			for i := range 2 { // the ClientConn's first call, and one once its service config is known
				before, began := c.served.Load(), counter.attempts.Load()
				assert.Equal(t, codes.Unavailable, callRoot(t, b).code, "call %d: root code", i)
				assert.Equal(t, tt.served, c.served.Load()-before, "call %d: C served", i)
				// Every attempt that left B reached C: grpc-go began no
				// other.
				assert.Equal(t, tt.served, counter.attempts.Load()-began, "call %d: grpc-go began attempts", i)
			}
			assert.Zero(t, counter.transparent.Load(), "transparent retries")
		})
	}
}

// replayer is an application's retry interceptor that sends each call
// twice, whatever the first returned, and records what each send gave
// back through its own call options.
type replayer struct {
	mu    sync.Mutex
	sends []send
}

type send struct {
	err      error
	trailer  metadata.MD
	peer     string
	finished []error
}

func (r *replayer) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var err error
	for range 2 {
		var (
			s  send
			p  peer.Peer
			mu sync.Mutex
		)
		own := []grpc.CallOption{grpc.Trailer(&s.trailer), grpc.Peer(&p), grpc.OnFinish(func(err error) {
			mu.Lock()
			defer mu.Unlock()
			s.finished = append(s.finished, err)
		})}
		err = invoker(ctx, method, req, reply, cc, append(slices.Clone(opts), own...)...)
		s.err = err
		if p.Addr != nil {
			s.peer = p.Addr.String()
		}
		mu.Lock()
		r.mu.Lock()
		r.sends = append(r.sends, s)
		r.mu.Unlock()
		mu.Unlock()
	}
	return err
}

func (r *replayer) recorded() []send {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sends)
}

// A replay AttemptsInterceptor refuses never leaves the process, and the
// interceptor that sent it gets what the attempt before it got: the same
// error value, the trailers, the peer, and its OnFinish called with that
// error. A replay errown's rules allow goes, stamped with its attempt
// number, even though the first attempt, in no incident yet, went
// unmarked.
func TestForeignReplay(t *testing.T) {
	for _, tt := range []struct {
		name      string
		unclaimed bool
		served    int64
		attempts  [][]string // C's errown-attempt headers, one per request
	}{
		{"unclaimed: refused", true, 1, [][]string{nil}},
		{"claimed: allowed", false, 2, [][]string{nil, {"2"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu      sync.Mutex
				headers [][]string
			)
			c := startGRPC(t, nodeConfig{name: _c, handler: func(ctx context.Context, _ *node) error {
				md, _ := metadata.FromIncomingContext(ctx)
				mu.Lock()
				headers = append(headers, md.Get("errown-attempt"))
				mu.Unlock()
				claim := _claimed
				if tt.unclaimed {
					claim = _unclaimed
				}
				_ = grpc.SetTrailer(ctx, metadata.Pairs(_claimHeader, claim, "x-app", "kept"))
				return status.Error(codes.Unavailable, "down")
			}})
			rp := new(replayer)
			b := startGRPC(t, nodeConfig{
				name: _b, errown: retrying(_c), callee: c, bare: true, attempts: true,
				inner: []grpc.UnaryClientInterceptor{rp.intercept},
			})
			require.Equal(t, codes.Unavailable, callRoot(t, b).code, "root code")
			assert.Equal(t, tt.served, c.served.Load(), "C served")
			mu.Lock()
			assert.Equal(t, tt.attempts, headers, "C saw errown-attempt")
			mu.Unlock()
			sends := rp.recorded()
			require.Len(t, sends, 2, "the application's sends")
			first, second := sends[0], sends[1]
			for i, s := range sends {
				assert.Equal(t, codes.Unavailable, status.Code(s.err), "send %d: got %v", i, s.err)
				assert.Equal(t, "kept", firstValue(s.trailer, "x-app"), "send %d: trailer %v", i, s.trailer)
				assert.NotEmpty(t, s.peer, "send %d: peer", i)
				assert.True(t, len(s.finished) == 1 && s.finished[0] == s.err, "send %d: OnFinish got %v, want its error once", i, s.finished)
			}
			refused := tt.unclaimed
			if refused {
				assert.True(t, second.err == first.err, "the refused replay got %v, want the first send's %v", second.err, first.err)
				assert.Equal(t, first.peer, second.peer, "the refused replay's peer")
				assert.Equal(t, _unclaimed, firstValue(second.trailer, _claimHeader), "the refused replay's claim (trailer %v)", second.trailer)
			}
			var denied, foreign int64
			if refused {
				denied = 1
			} else {
				foreign = 1
			}
			assert.Equal(t, denied, b.counter("retry.denied", map[string]string{"callee": _c, "reason": "foreign-unclaimed"}), "B's retry.denied{reason=foreign-unclaimed}")
			assert.Equal(t, foreign, b.counter("retry.foreign_attempts", map[string]string{"callee": _c}), "B's retry.foreign_attempts")
		})
	}
}

// firstValue returns md's first value for key, or "".
func firstValue(md metadata.MD, key string) string {
	if vs := md.Get(key); len(vs) > 0 {
		return vs[0]
	}
	return ""
}
