package e2e_test

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	ygrpc "go.uber.org/yarpc/transport/grpc"
	yhttp "go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcerrors"
)

var (
	_soakRequests = flag.Int("soak.requests", 10000, "requests the soak test sends (a full soak: 200000 or more)")
	_soakInFlight = flag.Int("soak.inflight", 1000, "requests the soak test keeps in flight (a full soak: 2000 or more)")
)

// fault is what one node does to one request.
type fault uint8

const (
	faultNone     fault = iota
	faultError          // returns unavailable
	faultPanic          // panics in the handler
	faultDetach         // answers, then calls its callee from a goroutine
	faultHang           // blocks until the request's deadline
	faultConnDrop       // (the leaf's HTTP server) closes the connection mid-response
)

// soakFaultHeader tells the leaf which fault to inject for a request: the
// interceptor in front of its HTTP inbound cannot read the body.
const soakFaultHeader = "soak-fault"

// faultFor picks node's fault for request id: a few percent of each kind
// the node is given, by a hash so every run is the same.
func faultFor(id uint64, node string, kinds ...fault) fault {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(node))
	r := h.Sum64() % 100
	for i, k := range kinds {
		if r < uint64(2*(i+1)) { // 2% each
			return k
		}
	}
	return faultNone
}

type soakNode struct {
	name     string
	d        *yarpc.Dispatcher
	mw       *errown.Middleware
	addr     func() string
	served   atomic.Int64
	detached atomic.Int64 // detached calls still running
}

// connDropper closes the connection mid-response for requests carrying
// the fault header: the status line and part of the headers go out, then
// nothing.
func connDropper(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Rpc-Header-"+soakFaultHeader) != "drop" {
			next.ServeHTTP(w, r)
			return
		}
		dropMidResponse(w)
	})
}

// TestSoak drives a 3-node chain (A over HTTP → B over gRPC → C over HTTP,
// errown everywhere, retries on A→B and B→C) with thousands of requests in
// flight and a few percent of every fault: errors, panics, detached calls,
// hangs until the deadline, and connections closed mid-response. It checks
// that every request got exactly one answer, that errown tracks nothing
// afterwards, and that goroutines and heap come back to where they were.
func TestSoak(t *testing.T) {
	requests, inFlight := *_soakRequests, *_soakInFlight
	ignore := goleak.IgnoreCurrent()
	goroutinesBefore := runtime.NumGoroutine()
	policy := func(callee string) errown.Config {
		return errown.Config{
			InboundConfig: errown.InboundConfig{Ingress: errownIngress(4 * inFlight)},
			Retry: errown.RetryConfig{
				Budget: retry.BudgetConfig{Ratio: 0.2},
				Policies: []retry.PolicyConfig{{
					Service:        callee,
					InitialBackoff: time.Millisecond,
					MaxBackoff:     5 * time.Millisecond,
					AttemptTimeout: time.Second, // a hung attempt is abandoned, and retried
					Idempotent:     new(true),
				}},
			},
		}
	}
	ctxTimeout := 10 * time.Second
	var codes [20]atomic.Int64 // answers by code

	// C: the leaf, over HTTP, behind the connection dropper.
	c := &soakNode{name: "soak-c"}
	cIn := yhttp.NewTransport().NewInbound("127.0.0.1:0", yhttp.Interceptor(connDropper))
	c.addr = func() string { return cIn.Addr().String() }
	c.build(t, errown.Config{InboundConfig: errown.InboundConfig{Ingress: errownIngress(4 * inFlight)}}, yarpc.Config{Name: c.name, Inbounds: yarpc.Inbounds{cIn}},
		func(ctx context.Context, id uint64, body []byte) ([]byte, error) {
			switch faultFor(id, c.name, faultError, faultPanic) {
			case faultError:
				return nil, yarpcerrors.UnavailableErrorf("c fails")
			case faultPanic:
				panic("c panics")
			}
			return body, nil
		})
	c.run(t)

	// B: over gRPC, calls C.
	b := &soakNode{name: "soak-b"}
	bListener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	grpcTransport := ygrpc.NewTransport()
	httpToC := yhttp.NewTransport(yhttp.MaxIdleConnsPerHost(inFlight))
	b.addr = func() string { return bListener.Addr().String() }
	var bClient raw.Client
	b.build(t, policy(c.name), yarpc.Config{
		Name:      b.name,
		Inbounds:  yarpc.Inbounds{grpcTransport.NewInbound(bListener)},
		Outbounds: yarpc.Outbounds{c.name: {Unary: httpToC.NewSingleOutbound("http://" + c.addr())}},
	}, func(ctx context.Context, id uint64, body []byte) ([]byte, error) {
		var opts []yarpc.CallOption
		if faultFor(id, "drop", faultConnDrop) == faultConnDrop {
			opts = append(opts, yarpc.WithHeader(soakFaultHeader, "drop"))
		}
		switch faultFor(id, b.name, faultError, faultPanic, faultDetach, faultHang) {
		case faultError:
			return nil, yarpcerrors.UnavailableErrorf("b fails")
		case faultPanic:
			panic("b panics")
		case faultHang:
			<-ctx.Done()
			return nil, ctx.Err()
		case faultDetach:
			// The request's body belongs to the transport once the
			// handler returns (gRPC recycles it): keep a copy.
			body := append([]byte(nil), body...)
			b.detached.Add(1)
			go func() {
				defer b.detached.Add(-1)
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ctxTimeout)
				defer cancel()
				_, _ = bClient.Call(dctx, "call", body, opts...)
			}()
			return body, nil
		}
		return bClient.Call(ctx, "call", body, opts...)
	})
	bClient = raw.New(b.d.ClientConfig(c.name))
	b.run(t)

	// A: over HTTP, calls B.
	a := &soakNode{name: "soak-a"}
	aIn := yhttp.NewTransport().NewInbound("127.0.0.1:0")
	a.addr = func() string { return aIn.Addr().String() }
	var aClient raw.Client
	a.build(t, policy(b.name), yarpc.Config{
		Name:      a.name,
		Inbounds:  yarpc.Inbounds{aIn},
		Outbounds: yarpc.Outbounds{b.name: {Unary: grpcTransport.NewSingleOutbound(b.addr())}},
	}, func(ctx context.Context, id uint64, body []byte) ([]byte, error) {
		if faultFor(id, a.name, faultError) == faultError {
			_, _ = aClient.Call(ctx, "call", body)
			return nil, yarpcerrors.InternalErrorf("a fails")
		}
		return aClient.Call(ctx, "call", body)
	})
	aClient = raw.New(a.d.ClientConfig(b.name))
	a.run(t)

	client := yarpc.NewDispatcher(yarpc.Config{Name: "soak-client", Outbounds: yarpc.Outbounds{
		a.name: {Unary: yhttp.NewTransport(yhttp.MaxIdleConnsPerHost(inFlight)).NewSingleOutbound("http://" + a.addr())},
	}})
	require.NoError(t, client.Start())
	caller := raw.New(client.ClientConfig(a.name))
	nodes := []*soakNode{a, b, c}

	send := func(from, to int, answers []atomic.Int32, peak *atomic.Int64) {
		var wg sync.WaitGroup
		next := atomic.Int64{}
		next.Store(int64(from))
		var inflight atomic.Int64
		for w := 0; w < inFlight; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					id := next.Add(1) - 1
					if id >= int64(to) {
						return
					}
					n := inflight.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					var body [8]byte
					binary.LittleEndian.PutUint64(body[:], uint64(id))
					ctx, cancel := context.WithTimeout(context.Background(), ctxTimeout)
					_, err := caller.Call(ctx, "call", body[:])
					cancel()
					codes[yarpcerrors.FromError(err).Code()].Add(1)
					inflight.Add(-1)
					answers[id].Add(1)
				}
			}()
		}
		wg.Wait()
	}
	// idle reports whether no node tracks a request and no detached call
	// runs. Seeing the ingress logs empty does not mean that no handler
	// will run: a request its caller gave up on may still be on its way
	// to a node (the transport has it, errown not yet) and detach a call
	// once there. So the detached calls are counted, not waited for with
	// a WaitGroup, whose first Add must happen before its Wait.
	idle := func() bool {
		for _, n := range nodes {
			if n.mw.Introspect().InFlight != 0 || n.detached.Load() != 0 {
				return false
			}
		}
		return true
	}
	settle := func() {
		// A detached call ends within ctxTimeout; the handlers it follows
		// within their requests' deadlines.
		require.Eventually(t, idle, testtime.Scale(3*ctxTimeout), 10*time.Millisecond, "ingress logs never emptied, or detached calls never ended")
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}

	answers := make([]atomic.Int32, requests)
	var peak, trackedPeak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				total := int64(0)
				for _, n := range nodes {
					total += int64(n.mw.Introspect().InFlight)
				}
				if total > trackedPeak.Load() {
					trackedPeak.Store(total)
				}
			}
		}
	}()

	// Send the requests in ten rounds. The first two warm up: connections
	// are opened and pools filled. The heap after them is the baseline a
	// leak would grow from, round by round.
	round := max(requests/10, 1)
	start := time.Now()
	var heapBefore uint64
	var trajectory []string
	for from := 0; from < requests; from += round {
		send(from, min(from+round, requests), answers, &peak)
		settle()
		h := heap()
		trajectory = append(trajectory, fmt.Sprintf("%.1f", float64(h)/(1<<20)))
		if from/round == 1 {
			heapBefore = h
		}
	}
	elapsed := time.Since(start)
	heapAfter := heap()
	close(stopSampling)
	<-sampled

	var answered []string
	for c := range codes {
		if n := codes[c].Load(); n > 0 {
			answered = append(answered, fmt.Sprintf("%v=%d", yarpcerrors.Code(c), n))
		}
	}
	t.Logf("answers by code: %s", strings.Join(answered, " "))
	for id := range answers {
		require.Equal(t, int32(1), answers[id].Load(), "request %d: answers", id)
	}
	for _, n := range nodes {
		assert.Equal(t, 0, n.mw.Introspect().InFlight, "%s tracks nothing once idle", n.name)
	}
	assert.Greater(t, peak.Load(), int64(inFlight/2), "thousands in flight")
	growth := int64(heapAfter) - int64(heapBefore)
	t.Logf("soak: %d requests in %v (%.0f/s), client in-flight peak %d, errown-tracked peak %d across nodes, served A=%d B=%d C=%d, heap %.1f MiB after warm-up -> %.1f MiB (MiB after each round: %s), goroutines %d before -> %d with idle connections open",
		requests, elapsed.Round(time.Millisecond), float64(requests)/elapsed.Seconds(), peak.Load(), trackedPeak.Load(),
		a.served.Load(), b.served.Load(), c.served.Load(), float64(heapBefore)/(1<<20), float64(heapAfter)/(1<<20),
		strings.Join(trajectory, " "), goroutinesBefore, runtime.NumGoroutine())
	assert.Less(t, growth, int64(16<<20), "heap grew by %d bytes over the soak", growth)

	require.NoError(t, client.Stop())
	for _, n := range nodes {
		require.NoError(t, n.d.Stop())
		require.NoError(t, n.mw.Stop())
	}
	require.Eventually(t, func() bool { return b.detached.Load() == 0 }, 3*ctxTimeout, 10*time.Millisecond, "detached calls still running once stopped")
	goleak.VerifyNone(t, ignore) // every goroutine the soak started has exited
	t.Logf("goroutines after stopping everything: %d (before the soak: %d)", runtime.NumGoroutine(), goroutinesBefore)
}

func errownIngress(maxInFlight int) inbound.IngressConfig {
	return inbound.IngressConfig{MaxInFlight: maxInFlight}
}

// build makes the node's dispatcher with errown and its handler, which
// counts each request and reads the request ID from the body. run starts
// it: whatever the handler reads must be set before, so that the
// dispatcher's goroutines see it.
func (n *soakNode) build(t *testing.T, cfg errown.Config, ycfg yarpc.Config, h func(context.Context, uint64, []byte) ([]byte, error)) {
	t.Helper()
	mw, err := errown.New(cfg)
	require.NoError(t, err)
	require.NoError(t, mw.Start())
	n.mw = mw
	n.d = yarpc.NewDispatcher(mw.Apply(ycfg))
	n.d.Register(raw.Procedure("call", func(ctx context.Context, body []byte) ([]byte, error) {
		n.served.Add(1)
		if len(body) != 8 {
			return nil, yarpcerrors.InvalidArgumentErrorf("%s: body of %d bytes", n.name, len(body))
		}
		return h(ctx, binary.LittleEndian.Uint64(body), body)
	}))
}

func (n *soakNode) run(t *testing.T) {
	t.Helper()
	require.NoError(t, n.d.Start(), fmt.Sprintf("start %s", n.name))
}
