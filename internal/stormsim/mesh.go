package stormsim

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/zap"
)

const (
	// _procedure is the one procedure every node serves.
	_procedure = "call"
	// _clientService is the name of the simulator's own dispatcher.
	_clientService = "stormsim-client"
	// _backoff is the backoff ceiling of every retry: tiny, so that runs
	// are fast (0 would mean retry's 10ms default).
	_backoff = time.Millisecond
	// _budgetWindow is longer than any run, so that the budget counts
	// every request of the run.
	_budgetWindow = time.Hour
	// _blindClaimHeader is the claim header of the retry middleware of a
	// node that runs no errown: a header nobody sends, so that it retries
	// whatever the claim, as a retry library that does not know errown.
	_blindClaimHeader = "stormsim-claim-ignored"
)

// serviceName returns the yarpc service name of the node called name.
func serviceName(name string) string { return "stormsim-" + strings.ToLower(name) }

// mesh is a started topology and the client dispatcher calling its root.
type mesh struct {
	g      *graph
	nodes  []*node // as in the topology
	errown []*errown.Middleware
	log    *radiusLog
	tracer *tracer
	// telemetry sums what errown at the root reports.
	telemetry telemetryLog
	// inflight counts the requests the nodes are handling.
	inflight atomic.Int64
	// started in start order: children before their callers, the client
	// last: yarpc dispatchers, and the servers and clients of grpc-go and
	// net/http nodes.
	started []stopper
	client  caller
}

// stopper is something started to stop: a yarpc dispatcher, or a grpc-go
// or net/http node.
type stopper interface{ Stop() error }

// startMesh builds and starts the services of g, children first so that
// each caller's outbounds know their addresses, then the client. On error
// everything already started is stopped.
func startMesh(o Options, g *graph) (_ *mesh, err error) {
	m := &mesh{g: g, nodes: make([]*node, len(g.nodes)), errown: make([]*errown.Middleware, len(g.nodes)), log: newRadiusLog(len(g.edges)), tracer: newTracer()}
	defer func() {
		if err != nil {
			err = multierr.Append(err, m.stop())
		}
	}()
	addrs := make([]string, len(g.nodes))
	for _, i := range g.order {
		addr, err := m.startNode(o, i, addrs)
		if err != nil {
			return nil, err
		}
		addrs[i] = addr
	}

	root := serviceName(g.nodes[0].name)
	if kind := o.nodeKind(0); native(kind) {
		c, stop, err := nativeClient(o, kind, _clientService, root, addrs[0], nil)
		if err != nil {
			return nil, err
		}
		m.started = append(m.started, stop)
		m.client = c
		return m, nil
	}
	e, err := newEndpoint(o.nodeKind(0), _clientService, false, o.Concurrency)
	if err != nil {
		return nil, err
	}
	disp := yarpc.NewDispatcher(yarpc.Config{
		Name:      _clientService,
		Outbounds: yarpc.Outbounds{root: {Unary: e.outbound(addrs[0])}},
	})
	if err := m.start(disp, e.abandon); err != nil {
		return nil, fmt.Errorf("start %s: %w", _clientService, err)
	}
	m.client = raw.New(disp.ClientConfig(root))
	return m, nil
}

// startNode starts node i, whose children listen on addrs, and returns its
// address.
func (m *mesh) startNode(o Options, i int, addrs []string) (string, error) {
	gn := m.g.nodes[i]
	service := serviceName(gn.name)
	n := &node{name: gn.name, fail: gn.fail, code: gn.code, drop: gn.drop, hang: gn.hang, seed: o.Seed}
	m.nodes[i] = n
	var policies []retry.PolicyConfig
	edges := make(map[string]int, len(gn.calls))
	for _, c := range gn.calls {
		child := serviceName(m.g.nodes[c.child].name)
		edges[child] = c.edge
		if gn.retry {
			policies = append(policies, retry.PolicyConfig{
				Service:        child,
				MaxAttempts:    o.Attempts,
				InitialBackoff: _backoff,
				MaxBackoff:     _backoff,
				AttemptTimeout: c.attemptTimeout,
				Idempotent:     new(true),
			})
		}
	}
	var hook func(inbound.Storm) // the root's storms are the lab's telemetry
	if i == 0 {
		hook = m.telemetry.record
	}
	if kind := o.nodeKind(i); native(kind) {
		return m.startNative(o, i, kind, n, addrs, policies, hook)
	}
	e, err := newEndpoint(o.nodeKind(i), service, true, o.Concurrency)
	if err != nil {
		return "", err
	}
	cfg := yarpc.Config{Name: service, Inbounds: yarpc.Inbounds{e.inbound}, Outbounds: yarpc.Outbounds{}}
	for _, c := range gn.calls {
		child := serviceName(m.g.nodes[c.child].name)
		out, err := yarpcOutbound(o, e, o.nodeKind(i), o.nodeKind(c.child), service, addrs[c.child])
		if err != nil {
			e.abandon()
			return "", err
		}
		cfg.Outbounds[child] = transport.Outbounds{Unary: out}
	}
	cfg.OutboundMiddleware.Unary = &retryRecorder{log: m.log, tracer: m.tracer, edges: edges}
	mw, err := o.withPolicy(&cfg, gn, policies, hook)
	if err != nil {
		e.abandon()
		return "", fmt.Errorf("%s: %w", service, err)
	}
	cfg.InboundMiddleware.Unary = yarpc.UnaryInboundMiddleware(&claimRecorder{n: n, inflight: &m.inflight}, cfg.InboundMiddleware.Unary)

	disp := yarpc.NewDispatcher(cfg)
	for _, c := range gn.calls {
		child := serviceName(m.g.nodes[c.child].name)
		n.calls = append(n.calls, nodeCall{client: raw.New(disp.ClientConfig(child)), times: c.times, soft: c.soft})
	}
	disp.Register(raw.Procedure(_procedure, n.handle))
	if mw != nil {
		if err := mw.Start(); err != nil {
			e.abandon()
			return "", fmt.Errorf("start errown of %s: %w", service, err)
		}
		m.errown[i] = mw
	}
	if err := m.start(disp, e.abandon); err != nil {
		return "", fmt.Errorf("start %s: %w", service, err)
	}
	o.Logger.Debug("node started", zap.String("node", n.name), zap.String("service", service), zap.String("addr", e.addr()))
	return e.addr(), nil
}

// settle waits, at most timeout, until no node is handling a request: a
// node that hangs counts its error only once its caller has given up,
// after the root request ended.
func (m *mesh) settle(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for m.inflight.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// start starts d and records it for stop; abandon runs if d did not start.
func (m *mesh) start(d *yarpc.Dispatcher, abandon func()) error {
	if err := d.Start(); err != nil {
		abandon()
		return err
	}
	m.started = append(m.started, d)
	return nil
}

// stop stops every started dispatcher in the reverse order of their start
// (callers before their callees), then errown's background work.
func (m *mesh) stop() error {
	var err error
	for i := len(m.started) - 1; i >= 0; i-- {
		err = multierr.Append(err, m.started[i].Stop())
	}
	m.started = nil
	for i, mw := range m.errown {
		if mw != nil {
			err = multierr.Append(err, mw.Stop())
			m.errown[i] = nil
		}
	}
	return err
}

// reset forgets what the nodes counted, the retries recorded and the
// trace; errown's memory keeps what it learned.
func (m *mesh) reset() {
	for _, n := range m.nodes {
		n.reset()
	}
	m.log.reset()
	m.telemetry.reset()
	m.tracer.start(-1)
}

// withPolicy adds o.Policy's middleware for node n, retrying per policies,
// to cfg, inside nothing and outside cfg's own middleware. Under the
// ownership policies it returns the errown middleware of a node that runs
// it, to start and stop.
func (o Options) withPolicy(cfg *yarpc.Config, n gnode, policies []retry.PolicyConfig, hook func(inbound.Storm)) (*errown.Middleware, error) {
	mw, blind, err := o.policy(n, policies, hook)
	switch {
	case err != nil:
		return nil, err
	case mw != nil:
		*cfg = mw.Apply(*cfg)
	case blind != nil:
		cfg.OutboundMiddleware.Unary = yarpc.UnaryOutboundMiddleware(blind, cfg.OutboundMiddleware.Unary)
	}
	return mw, nil
}

// policy returns o.Policy's middleware for node n, retrying per
// policies: under the ownership policies, for a node that runs errown,
// its errown middleware (to start and stop); else, when n retries, the
// outbound middleware of a retry library blind to claims (retry.New
// around attemptTimer); else neither.
func (o Options) policy(n gnode, policies []retry.PolicyConfig, hook func(inbound.Storm)) (*errown.Middleware, middleware.UnaryOutbound, error) {
	budget := retry.BudgetConfig{Ratio: o.Budget, NoFloor: true, Window: _budgetWindow}
	if !o.Policy.budgeted() {
		budget = retry.BudgetConfig{Disabled: true}
	}
	switch {
	case !oneOf(string(o.Policy), policyNames()):
		return nil, nil, fmt.Errorf("policy: must be one of %v, got %q", policyNames(), o.Policy)
	case o.Policy.runsErrown() && n.errown:
		mw, err := errown.New(errown.Config{
			Mode:         o.Mode,
			UnknownEdges: o.UnknownEdges,
			Retry:        errown.RetryConfig{Budget: budget, Policies: policies},
			Memory:       o.Memory,
		}, errown.WithLogger(o.Logger), errown.WithStormHook(hook))
		if err != nil {
			return nil, nil, err
		}
		return mw, nil, nil
	case len(policies) > 0:
		// Blind to claims, and to errown's rule for per-attempt
		// timeouts: the attempts are timed out below the retry
		// middleware, which sees no attemptTimeout (see attemptTimer).
		timer := &attemptTimer{timeouts: make(map[string]time.Duration, len(policies))}
		blind := make([]retry.PolicyConfig, len(policies))
		for i, p := range policies {
			timer.timeouts[p.Service] = p.AttemptTimeout
			p.AttemptTimeout = 0
			blind[i] = p
		}
		r, err := retry.New(retry.Config{ClaimHeader: _blindClaimHeader, Budget: budget, Policies: blind}, retry.WithLogger(o.Logger))
		if err != nil {
			return nil, nil, err
		}
		return nil, yarpc.UnaryOutboundMiddleware(r, timer), nil
	default:
		return nil, nil, nil
	}
}

// dependencies returns what errown at node i knows of its edges, nil for
// a node that runs no errown.
func (m *mesh) dependencies(i int) []depmem.EdgeView {
	if m.errown[i] == nil {
		return nil
	}
	if deps := m.errown[i].Dependencies(); len(deps) > 0 {
		return deps
	}
	return nil
}
