package stormsim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/retry"
	"go.uber.org/multierr"
	"go.uber.org/yarpc/yarpcerrors"
)

// Result is what one Run measured.
type Result struct {
	// Topology is the name of the topology run.
	Topology string `json:"topology"`
	// Policy is the policy of every hop.
	Policy Policy `json:"policy"`
	// Mode is errown's mode under the ownership policies, when observe.
	Mode retry.Mode `json:"mode,omitempty"`
	// Transport is the transport of every hop.
	Transport string `json:"transport"`
	// Requests is the number of root requests sent and counted.
	Requests int `json:"requests"`
	// Warmup is the number of root requests sent before, not counted.
	Warmup int `json:"warmup,omitempty"`
	// Seed seeded the nodes' failures.
	Seed uint64 `json:"seed"`
	// Failed is the number of counted root requests that failed.
	Failed int `json:"failed"`
	// Nodes are the nodes of the topology, root first.
	Nodes []NodeResult `json:"nodes"`
	// Edges are the topology's caller→callee hops, in the order of the
	// calls.
	Edges []EdgeResult `json:"edges"`
	// Radius is the retry storm radius over the failed root requests.
	Radius Radius `json:"radius"`
	// Telemetry is what errown at the root service reported through its
	// storm telemetry, for a run whose root runs errown; nil otherwise.
	Telemetry *Telemetry `json:"telemetry,omitempty"`
	// Trace is every attempt of every call made for the first counted
	// root request, when Options.Trace asked for it.
	Trace []TraceEvent `json:"trace,omitempty"`
	// Timeline is what an open-loop run measured over time; nil for a
	// closed loop.
	Timeline *Timeline `json:"timeline,omitempty"`
	// Elapsed is how long the requests took, setup and teardown excluded.
	Elapsed time.Duration `json:"-"`
}

// NodeResult is what one node served.
type NodeResult struct {
	// Name is the node's name.
	Name string `json:"name"`
	// Depth is the node's shortest distance from the root.
	Depth int `json:"depth"`
	// Served is the number of requests the node's handler ran.
	Served int64 `json:"served"`
	// Ratio is Served per root request.
	Ratio float64 `json:"ratio"`
	// MaxPerPath is the most requests the node served on one call path
	// of one root request: the attempts that reached it along one path of
	// logical calls from the root (R^d for a node d hops below where
	// every hop makes R attempts; on a chain, per root request).
	MaxPerPath int64 `json:"maxPerPath"`
	// Retried is the number of requests that arrived as a retry.
	Retried int64 `json:"retried"`
	// Errors is the number of requests the node failed.
	Errors int64 `json:"errors"`
	// Unclaimed is the number of those whose error went out unclaimed.
	Unclaimed int64 `json:"unclaimed"`
	// OwnFailures is the number of requests the node's own work failed.
	OwnFailures int64 `json:"ownFailures"`
	// OwnUnclaimed is the number of own failures that went out
	// unclaimed: the node blamed a dependency for them.
	OwnUnclaimed int64 `json:"ownUnclaimed"`
	// Dependencies is what errown at the node knew of its edges at the
	// end of the run, when it runs errown and knew any.
	Dependencies []depmem.EdgeView `json:"dependencies,omitempty"`
}

// EdgeResult is what was spent on one caller→callee hop.
type EdgeResult struct {
	// From is the caller's name.
	From string `json:"from"`
	// To is the callee's name.
	To string `json:"to"`
	// Retries is the number of retries (attempts 2 and later) sent over
	// the hop.
	Retries int64 `json:"retries"`
	// PerRequest is Retries per root request.
	PerRequest float64 `json:"perRequest"`
}

// Ratios returns the ratio of every node, root first.
func (r Result) Ratios() []float64 {
	ratios := make([]float64, len(r.Nodes))
	for i, n := range r.Nodes {
		ratios[i] = n.Ratio
	}
	return ratios
}

// Node returns the result of the node called name, or a zero NodeResult.
func (r Result) Node(name string) NodeResult {
	for _, n := range r.Nodes {
		if strings.EqualFold(n.Name, name) {
			return n
		}
	}
	return NodeResult{}
}

// Edge returns the result of the hop from→to, or a zero EdgeResult.
func (r Result) Edge(from, to string) EdgeResult {
	for _, e := range r.Edges {
		if strings.EqualFold(e.From, from) && strings.EqualFold(e.To, to) {
			return e
		}
	}
	return EdgeResult{}
}

// Run starts the topology o describes (o.Topology, else the chain of
// o.Depth nodes with the one at o.FailDepth failing), sends o.Warmup and
// then o.Requests root requests at it with at most o.Concurrency in
// flight, stops every service it started (callers first) and returns what
// each node served for the o.Requests counted.
//
// Every root request must end in success or in a failing node's error,
// and in success only where Analyze says one can. When some end otherwise
// (a timeout, a transport error, a success where every request must fail)
// the measured figures are not the experiment's: Run returns the Result
// with an error counting the outcomes. Run stops sending when ctx is done
// and returns ctx's error.
//
// Under open-loop load (o.Rate, or the topology's rate) Run instead sends
// root requests at the times of a seeded Poisson schedule for the load's
// duration, each with the deadline o.Timeout, runs the topology's
// triggers on time, and returns what it measured over time in
// Result.Timeline; every outcome of a root request is then a measure, not
// an error.
func Run(ctx context.Context, o Options) (_ Result, err error) {
	o, g, err := o.compiled()
	if err != nil {
		return Result{}, err
	}
	expected := newAnalyzer(g, o).analyze()
	var c *clock
	if o.openLoop() {
		c = o.clock()
	}
	m, err := startMesh(o, g, c)
	if err != nil {
		return Result{}, fmt.Errorf("stormsim: %w", err)
	}
	defer func() {
		if stopErr := m.stop(); stopErr != nil {
			err = multierr.Append(err, fmt.Errorf("stormsim: stop: %w", stopErr))
		}
	}()
	if c != nil {
		return m.runOpen(ctx, o, c)
	}

	codes := g.failCodes()
	if g.partial() && g.timed() {
		// Some instances are healthy and attempts are timed out: on a
		// loaded machine a healthy instance's answer can come after its
		// caller's attempt timeout, a failure of the run's own; and an
		// attempt whose deadline passed before yarpc's HTTP outbound sent
		// it goes out with a negative TTL, which the callee refuses as
		// invalid-argument.
		codes[yarpcerrors.CodeDeadlineExceeded] = true
		codes[yarpcerrors.CodeInvalidArgument] = true
	}
	if o.Policy.runsErrown() && codes[yarpcerrors.CodeDeadlineExceeded] {
		// A hanging node times its callers' attempts out: errown's limit
		// on attempts in flight to it (retry.overload) sheds some calls at
		// once, resource-exhausted, rather than add them to its queue.
		codes[yarpcerrors.CodeResourceExhausted] = true
	}
	if o.Failsafe != nil {
		// failsafe-go's adaptive limiter refuses calls at once (see
		// Failsafe).
		codes[yarpcerrors.CodeResourceExhausted] = true
	}
	d := driver{o: o, client: m.client, codes: codes, mustFail: expected.Availability == 0}
	var out, warm outcomes
	if o.Warmup > 0 {
		warm = d.drive(ctx, 0, o.Warmup)
		m.settle(o.Timeout)
		m.reset()
	}
	if o.Trace {
		m.tracer.start(int64(o.Warmup))
	}
	start := time.Now()
	if ctx.Err() == nil {
		out = d.drive(ctx, o.Warmup, o.Requests)
	}
	elapsed := time.Since(start)
	m.settle(o.Timeout)
	res := m.result(o, out.sent, out.failed, elapsed)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("stormsim: stopped after %d of %d requests: %w", out.sent, o.Requests, err)
	}
	if err := warm.err(); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	return res, out.err()
}

// result returns what the nodes counted for sent root requests, of which
// failed failed, sent in elapsed.
func (m *mesh) result(o Options, sent int, failed []int64, elapsed time.Duration) Result {
	g := m.g
	res := Result{
		Topology:  g.t.Name,
		Policy:    o.Policy,
		Mode:      o.Mode,
		Transport: o.Transport,
		Requests:  sent,
		Warmup:    o.Warmup,
		Seed:      o.Seed,
		Failed:    len(failed),
		Elapsed:   elapsed,
		Nodes:     make([]NodeResult, len(m.nodes)),
		Edges:     make([]EdgeResult, len(g.edges)),
		Radius:    m.log.radius(failed),
		Trace:     m.tracer.trace(g),
	}
	if m.errown[0] != nil {
		res.Telemetry = m.telemetry.telemetry(sent, len(failed))
	}
	per := func(n int64) float64 {
		if sent == 0 {
			return 0
		}
		return float64(n) / float64(sent)
	}
	for i, n := range m.nodes {
		res.Nodes[i] = NodeResult{
			Name:         n.name,
			Depth:        g.nodes[i].depth,
			Served:       n.served.Load(),
			Ratio:        per(n.served.Load()),
			MaxPerPath:   n.maxPerPath(),
			Retried:      n.retried.Load(),
			Errors:       n.errors.Load(),
			Unclaimed:    n.unclaimed.Load(),
			OwnFailures:  n.ownFailures.Load(),
			OwnUnclaimed: n.ownUnclaimed.Load(),
			Dependencies: m.dependencies(i),
		}
	}
	for e, ed := range g.edges {
		retries := m.log.retries[e].Load()
		res.Edges[e] = EdgeResult{From: g.nodes[ed.from].name, To: g.nodes[ed.to].name, Retries: retries, PerRequest: per(retries)}
	}
	return res
}

// outcomes counts how the root requests ended.
type outcomes struct {
	sent       int
	failed     []int64        // IDs of the root requests that failed as expected
	unexpected map[string]int // by outcome
	first      error          // the first unexpected error, nil for a success
}

func (o outcomes) err() error {
	if len(o.unexpected) == 0 {
		return nil
	}
	keys := make([]string, 0, len(o.unexpected))
	total := 0
	for k, n := range o.unexpected {
		keys = append(keys, fmt.Sprintf("%s: %d", k, n))
		total += n
	}
	sort.Strings(keys)
	err := fmt.Errorf("stormsim: %d of %d requests did not end in a failing node's error or a possible success (%s)",
		total, o.sent, strings.Join(keys, ", "))
	if o.first != nil {
		err = fmt.Errorf("%w; first: %v", err, o.first)
	}
	return err
}

// rootCode returns the code of err, what a root request made with ctx
// returned. yarpc's HTTP outbound reports a deadline that net/http hit
// mid-request, under a wrapper it does not unwrap, as "unknown error from
// http client: ... context deadline exceeded": when the request's own
// deadline passed, an unknown error is its timeout.
func rootCode(ctx context.Context, err error) yarpcerrors.Code {
	code := yarpcerrors.FromError(err).Code()
	if code == yarpcerrors.CodeUnknown && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return yarpcerrors.CodeDeadlineExceeded
	}
	return code
}

// driver sends root requests.
type driver struct {
	o      Options
	client caller
	// codes are the codes of the nodes' failures: any other is unexpected.
	codes map[yarpcerrors.Code]bool
	// mustFail: every root request must fail.
	mustFail bool
}

// drive sends n root requests with IDs from first on through the client
// from o.Concurrency goroutines, each request with its own o.Timeout,
// until all are sent or ctx is done.
func (d driver) drive(ctx context.Context, first, n int) outcomes {
	var (
		next, sent atomic.Int64
		mu         sync.Mutex
		out        = outcomes{unexpected: make(map[string]int)}
		wg         sync.WaitGroup
		total      = d.o.Warmup + d.o.Requests
	)
	record := func(id int64, err error, code yarpcerrors.Code) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil && !d.mustFail:
		case err == nil:
			out.unexpected["ok"]++
		case d.codes[code]:
			out.failed = append(out.failed, id)
		default:
			out.unexpected[code.String()]++
			if out.first == nil {
				out.first = err
			}
		}
	}
	for range min(d.o.Concurrency, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				id := int64(first) + i - 1
				cctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
				_, err := d.client.Call(cctx, _procedure, []byte(strconv.FormatInt(id, 10)))
				code := rootCode(cctx, err)
				cancel()
				done := sent.Add(1)
				if ctx.Err() == nil { // a request cut short by ctx says nothing
					record(id, err, code)
				}
				if d.o.Progress != nil {
					d.o.Progress(first+int(done), total)
				}
			}
		})
	}
	wg.Wait()
	out.sent = int(sent.Load())
	return out
}
