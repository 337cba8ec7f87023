package stormsim

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/internal/testmesh"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/uber-go/tally/v4"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/peer/pendingheap"
	"go.uber.org/yarpc/peer/randpeer"
	"go.uber.org/yarpc/peer/roundrobin"
	"go.uber.org/yarpc/peer/tworandomchoices"
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
	// last: yarpc nodes (procs), the servers and clients of grpc-go and
	// net/http nodes, and the client's dispatcher.
	started []stopper
	client  caller
	// addrs are the nodes' addresses, those of their instances in
	// order; procs the yarpc nodes' dispatchers, per instance (nil for a
	// grpc-go or net/http node), which a crash trigger stops and starts
	// again.
	addrs [][]string
	procs [][]*nodeProc
	// scopes are the nodes' metrics under open-loop load, where the
	// sampler reads them (nil in a closed loop: see scope): errown's, or
	// the blind retry middleware's and the adaptive throttle's.
	scopes []tally.TestScope
	// series are the series of the nodes with a capacity or a trigger
	// under open-loop load (nil for the others); retries counts the
	// retries sent per bin (nil in a closed loop).
	series  []*nodeSeries
	retries *counts
}

// nodeProc is a running yarpc node and the address it listens on. It is
// safe for concurrent use.
type nodeProc struct {
	mu   sync.Mutex
	node *testmesh.Node // nil while it is not running
	addr string
}

func (p *nodeProc) run(n *testmesh.Node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.node, p.addr = n, n.Addr()
}

// Stop stops the node and its errown, if it runs.
func (p *nodeProc) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.node == nil {
		return nil
	}
	err := p.node.Stop()
	p.node = nil
	return err
}

// stopper is something started to stop: a yarpc dispatcher, or a grpc-go
// or net/http node.
type stopper interface{ Stop() error }

// startMesh builds and starts the services of g, children first so that
// each caller's outbounds know their addresses, then the client. On error
// everything already started is stopped. Under open-loop load (c not
// nil) the nodes with a capacity or a trigger record their series on c,
// and the retries sent are counted on it.
func startMesh(o Options, g *graph, c *clock) (_ *mesh, err error) {
	m := &mesh{
		g: g, nodes: make([]*node, len(g.nodes)), errown: make([]*errown.Middleware, len(g.nodes)),
		log: newRadiusLog(len(g.edges)), tracer: newTracer(),
		addrs: make([][]string, len(g.nodes)), procs: make([][]*nodeProc, len(g.nodes)),
		series: make([]*nodeSeries, len(g.nodes)),
	}
	if c != nil {
		m.scopes = make([]tally.TestScope, len(g.nodes))
		m.retries = newCounts(c)
		for i, n := range g.nodes {
			m.scopes[i] = tally.NewTestScope("", nil)
			if n.capacity != nil || len(n.triggers) > 0 {
				m.series[i] = newNodeSeries(c)
			}
		}
	}
	defer func() {
		if err != nil {
			err = multierr.Append(err, m.stop())
		}
	}()
	for _, i := range g.order {
		if err := m.startNode(o, i); err != nil {
			return nil, err
		}
	}

	root := serviceName(g.nodes[0].name)
	if kind := o.nodeKind(0); native(kind) {
		c, stop, err := nativeClient(o, kind, _clientService, root, m.addrs[0][0], nil)
		if err != nil {
			return nil, err
		}
		m.started = append(m.started, stop)
		m.client = c
		return m, nil
	}
	disp, err := testmesh.NewClient(_clientService, testmesh.TransportOptions{IdleConns: o.idleConns()}, nil, m.callee(o, 0, nil))
	if err != nil {
		return nil, err
	}
	m.started = append(m.started, disp)
	m.client = raw.New(disp.ClientConfig(root))
	return m, nil
}

// callee returns the callee node i is to a caller: its only instance's
// address, or its instances' addresses behind its peer list
// (gnode.peerList), which chooser, when not nil, wraps.
func (m *mesh) callee(o Options, i int, chooser func(peer.Chooser) peer.Chooser) testmesh.Callee {
	gn := m.g.nodes[i]
	c := testmesh.Callee{Name: serviceName(gn.name), Kind: wireKind(o.nodeKind(i)), Addr: m.addrs[i][0]}
	if gn.instances > 1 {
		c.Addrs, c.Chooser = m.addrs[i], chooser
		c.List = func(t peer.Transport) peer.ChooserList { return peerList(gn.peerList, t) }
	}
	return c
}

// peerList returns yarpc's peer list called name on t.
func peerList(name string, t peer.Transport) peer.ChooserList {
	switch name {
	case PeerFewestPending:
		return pendingheap.New(t)
	case PeerTwoRandomChoices:
		return tworandomchoices.New(t)
	case PeerRandom:
		return randpeer.New(t)
	default:
		return roundrobin.New(t)
	}
}

// startNode starts node i's instances, whose children listen on
// m.addrs, and notes their addresses.
func (m *mesh) startNode(o Options, i int) error {
	gn := m.g.nodes[i]
	n := &node{name: gn.name, fail: gn.fail, code: gn.code, drop: gn.drop, hang: gn.hang, seed: o.Seed, series: m.series[i]}
	for k := range gn.instances {
		in := &instance{n: n, faulty: k < gn.faulty}
		if gn.capacity != nil {
			c := *gn.capacity
			if o.NoQueue {
				c.Queue = 0
			}
			in.capacity = newCapacityQueue(gn.name, c, gn.leave, m.series[i])
		}
		n.inst = append(n.inst, in)
	}
	m.nodes[i] = n
	if kind := o.nodeKind(i); native(kind) {
		if gn.instances > 1 {
			return fmt.Errorf("%s: a %s node runs one instance; instances need a yarpc transport, got %d", gn.name, kind, gn.instances)
		}
		for _, c := range gn.calls {
			if child := m.g.nodes[c.child]; child.instances > 1 {
				return fmt.Errorf("%s: a %s node calls one instance; %s's %d instances need a yarpc caller", gn.name, kind, child.name, child.instances)
			}
		}
		policies, _ := m.policies(o, i)
		addrs := make([]string, len(m.addrs))
		for j, a := range m.addrs {
			if len(a) > 0 {
				addrs[j] = a[0]
			}
		}
		addr, err := m.startNative(o, i, kind, n, addrs, policies, m.hook(i))
		if err != nil {
			return err
		}
		m.addrs[i] = []string{addr}
		return nil
	}
	m.addrs[i] = make([]string, gn.instances)
	m.procs[i] = make([]*nodeProc, gn.instances)
	for k := range gn.instances {
		p := &nodeProc{}
		m.procs[i][k] = p
		m.started = append(m.started, p) // stops nothing until it runs
		addr, err := m.serve(o, i, k, "")
		if err != nil {
			return err
		}
		m.addrs[i][k] = addr
	}
	return nil
}

// policies returns the retry policies of node i for its calls (none when
// it has no retry policy), and its edges by callee service.
func (m *mesh) policies(o Options, i int) ([]retry.PolicyConfig, map[string]int) {
	gn := m.g.nodes[i]
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
	return policies, edges
}

// scope returns the metrics scope of node i: its test scope under
// open-loop load, else none.
func (m *mesh) scope(i int) tally.Scope {
	if m.scopes == nil {
		return tally.NoopScope
	}
	return m.scopes[i]
}

// hook returns the storm hook of node i: the root's storms are the lab's
// telemetry.
func (m *mesh) hook(i int) func(inbound.Storm) {
	if i == 0 {
		return m.telemetry.record
	}
	return nil
}

// inbound returns the middleware outside errown's on an instance of
// node n: the recorder, and inside it the failsafe-go arm's limiter when
// it runs on the server side (each instance its own).
func (m *mesh) inbound(o Options, n *node) middleware.UnaryInbound {
	rec := &claimRecorder{n: n, inflight: &m.inflight}
	if o.Failsafe == nil || !o.Failsafe.Server {
		return rec
	}
	return yarpc.UnaryInboundMiddleware(rec, newFailsafeInbound())
}

// serve starts instance k of yarpc node i, listening on listen ("" for
// an ephemeral port), with its errown under the ownership policies, as
// m.procs[i][k]; it returns the address it listens on.
func (m *mesh) serve(o Options, i, k int, listen string) (string, error) {
	gn, n := m.g.nodes[i], m.nodes[i]
	in := n.inst[k]
	service := serviceName(gn.name)
	policies, edges := m.policies(o, i)
	ecfg, eopts, blind, err := o.policy(gn, policies, m.hook(i), m.scope(i))
	if err != nil {
		return "", fmt.Errorf("%s: %w", service, err)
	}
	// The blind retry middleware goes outside the recorder, errown's
	// (Apply) too.
	var outbound middleware.UnaryOutbound = &retryRecorder{log: m.log, tracer: m.tracer, edges: edges, sent: m.retries}
	if blind != nil {
		outbound = yarpc.UnaryOutboundMiddleware(blind, outbound)
	}
	cfg := testmesh.Config{
		Name: service, Kind: o.nodeKind(i), Listen: listen,
		Errown: ecfg, ErrownOptions: eopts,
		Transport:    testmesh.TransportOptions{IdleConns: o.idleConns()},
		Outbound:     outbound,
		OuterInbound: m.inbound(o, n),
		Register: func(d *yarpc.Dispatcher, _ *errown.Middleware) error {
			calls := make([]nodeCall, 0, len(gn.calls))
			for _, c := range gn.calls {
				child := serviceName(m.g.nodes[c.child].name)
				calls = append(calls, nodeCall{client: raw.New(d.ClientConfig(child)), times: c.times, soft: c.soft})
			}
			in.calls = calls // no handler runs: the dispatcher has not started
			d.Register(raw.Procedure(_procedure, in.handle))
			return nil
		},
	}
	for _, c := range gn.calls {
		cfg.Callees = append(cfg.Callees, m.callee(o, c.child, o.Chooser))
	}
	node, err := testmesh.Start(cfg)
	if err != nil {
		return "", fmt.Errorf("%s: %w", service, err)
	}
	if k == 0 {
		m.errown[i] = node.Middleware()
	}
	m.procs[i][k].run(node)
	o.Logger.Debug("node started", zap.String("node", n.name), zap.String("service", service), zap.String("addr", node.Addr()))
	return node.Addr(), nil
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

// stop stops every started node and client in the reverse order of
// their start (callers before their callees), each node's errown with it.
func (m *mesh) stop() error {
	var err error
	for i := len(m.started) - 1; i >= 0; i-- {
		err = multierr.Append(err, m.started[i].Stop())
	}
	m.started = nil
	clear(m.errown)
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

// policy returns o.Policy's middleware for node n, retrying per
// policies, with its metrics on scope: under the ownership policies, for
// a node that runs errown, its errown's Config (admission disabled;
// o.Errown changes it) and
// options; else, when n retries, the outbound middleware of a retry
// library blind to claims (retrier.New around attemptTimer, and
// o.Throttle's adaptive throttle between them); else neither.
func (o Options) policy(n gnode, policies []retry.PolicyConfig, hook func(inbound.Storm), scope tally.Scope) (*errown.Config, []errown.Option, middleware.UnaryOutbound, error) {
	budget := retry.BudgetConfig{Ratio: o.Budget, NoFloor: true, Window: o.budgetWindow()}
	if !o.Policy.budgeted() {
		budget = retry.BudgetConfig{Disabled: true}
	}
	switch {
	case !oneOf(string(o.Policy), policyNames()):
		return nil, nil, nil, fmt.Errorf("policy: must be one of %v, got %q", policyNames(), o.Policy)
	case o.Policy.runsErrown() && n.errown:
		cfg := errown.Config{
			Mode:          o.Mode,
			InboundConfig: errown.InboundConfig{UnknownEdges: o.UnknownEdges},
			Retry:         errown.RetryConfig{Budget: budget, Policies: policies},
			Memory:        o.Memory,
		}
		// The lab's arms compare retry policies: admission, enforcing
		// by default, is off unless an arm asks for it (CapacityArms).
		cfg.Admission.Mode = inbound.AdmissionDisabled
		if o.Errown != nil {
			o.Errown(&cfg)
		}
		return &cfg, []errown.Option{errown.WithLogger(o.Logger), errown.WithStormHook(hook), errown.WithScope(scope)}, nil, nil
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
		if o.Failsafe != nil {
			return nil, nil, yarpc.UnaryOutboundMiddleware(newFailsafeOutbound(*o.Failsafe, o.Attempts), timer), nil
		}
		r, err := retrier.New(retry.Config{Headers: ownership.Headers{Claim: _blindClaimHeader}, Budget: budget, Policies: blind}, retrier.WithSinks(obs.Sinks{Logger: o.Logger, Scope: scope}), retrier.PlainBudget())
		if err != nil {
			return nil, nil, nil, err
		}
		if o.Throttle != nil {
			th := newThrottle(*o.Throttle, n.name, o.Seed, scope)
			return nil, nil, yarpc.UnaryOutboundMiddleware(r, th, timer), nil
		}
		return nil, nil, yarpc.UnaryOutboundMiddleware(r, timer), nil
	default:
		return nil, nil, nil, nil
	}
}

// dependencies returns what errown at node i knows of its edges, nil for
// a node that runs no errown.
func (m *mesh) dependencies(i int) []depmem.EdgeView {
	if m.errown[i] == nil {
		return nil
	}
	if deps := m.errown[i].Introspect().Dependencies; len(deps) > 0 {
		return deps
	}
	return nil
}
