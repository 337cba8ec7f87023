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
				if !maps.Equal(got, tt.served) {
					t.Errorf("root request %d: served %v, want %v", i, got, tt.served)
				}
				if r.code != codes.Unavailable || r.get(_claimHeader) != _unclaimed {
					t.Errorf("root request %d: root got %v, trailer %v; want unavailable, unclaimed", i, r.code, r.trailer)
				}
				if !tt.attempts && tt.bare {
					continue
				}
				// The root's figures count every attempt that left a
				// process: 5 served, one retry, radius 1.
				st := wire.ParseStorm(r.get(_stormHeader))
				if !st.Known || st.Storm.Served != 5 || st.Storm.Retries != 1 || st.Storm.Radius != 1 {
					t.Errorf("root request %d: storm %q, want 5 served, 1 retry, radius 1", i, r.get(_stormHeader))
				}
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
				if got := h.caller.counter("retry."+h.counter, tags); got != h.want*_roots {
					t.Errorf("%s's retry.%s%v = %d, want %d", h.caller.name, h.counter, tags, got, h.want*_roots)
				}
			}
			// Each hop's egress log counts the attempts that left it.
			if got := c.counter("egress.failures", map[string]string{"claim": _claimed}); got != _roots {
				t.Errorf("C's egress.failures{claim=claimed} = %d, want %d", got, _roots)
			}
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
				if r := callRoot(t, b); r.code != codes.Unavailable {
					t.Errorf("call %d: root got %v, want unavailable", i, r.code)
				}
				if got := c.served.Load() - before; got != tt.served {
					t.Errorf("call %d: C served %d, want %d", i, got, tt.served)
				}
				// Every attempt that left B reached C: grpc-go began no
				// other.
				if got := counter.attempts.Load() - began; got != tt.served {
					t.Errorf("call %d: grpc-go began %d attempts, want %d", i, got, tt.served)
				}
			}
			if got := counter.transparent.Load(); got != 0 {
				t.Errorf("%d transparent retries, want none", got)
			}
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
// number.
func TestForeignReplay(t *testing.T) {
	for _, tt := range []struct {
		name      string
		unclaimed bool
		served    int64
		attempts  []string // C's errown-attempt headers, one per request
	}{
		{"unclaimed: refused", true, 1, []string{"1"}},
		{"claimed: allowed", false, 2, []string{"1", "2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu      sync.Mutex
				headers []string
			)
			c := startGRPC(t, nodeConfig{name: _c, handler: func(ctx context.Context, _ *node) error {
				md, _ := metadata.FromIncomingContext(ctx)
				mu.Lock()
				headers = append(headers, firstValue(md, "errown-attempt"))
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
			if r := callRoot(t, b); r.code != codes.Unavailable {
				t.Fatalf("root got %v, want unavailable", r.code)
			}
			if got := c.served.Load(); got != tt.served {
				t.Errorf("C served %d, want %d", got, tt.served)
			}
			mu.Lock()
			if !slices.Equal(headers, tt.attempts) {
				t.Errorf("C saw errown-attempt %q, want %q", headers, tt.attempts)
			}
			mu.Unlock()
			sends := rp.recorded()
			if len(sends) != 2 {
				t.Fatalf("the application sent %d times, want 2", len(sends))
			}
			first, second := sends[0], sends[1]
			for i, s := range sends {
				if status.Code(s.err) != codes.Unavailable || firstValue(s.trailer, "x-app") != "kept" || s.peer == "" {
					t.Errorf("send %d: got %v, trailer %v, peer %q", i, s.err, s.trailer, s.peer)
				}
				if len(s.finished) != 1 || s.finished[0] != s.err {
					t.Errorf("send %d: OnFinish got %v, want its error once", i, s.finished)
				}
			}
			refused := tt.unclaimed
			if refused && (second.err != first.err || second.peer != first.peer || firstValue(second.trailer, _claimHeader) != _unclaimed) {
				t.Errorf("the refused replay got %v (peer %q, trailer %v), want the first send's %v (peer %q)", second.err, second.peer, second.trailer, first.err, first.peer)
			}
			var denied, foreign int64
			if refused {
				denied = 1
			} else {
				foreign = 1
			}
			if got := b.counter("retry.denied", map[string]string{"callee": _c, "reason": "foreign-unclaimed"}); got != denied {
				t.Errorf("B's retry.denied{reason=foreign-unclaimed} = %d, want %d", got, denied)
			}
			if got := b.counter("retry.foreign_attempts", map[string]string{"callee": _c}); got != foreign {
				t.Errorf("B's retry.foreign_attempts = %d, want %d", got, foreign)
			}
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
