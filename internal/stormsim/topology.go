package stormsim

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/errown/errown/internal/wire"

	"go.uber.org/multierr"
	"go.uber.org/yarpc/yarpcerrors"
	"gopkg.in/yaml.v2"
)

// Limits checked by Topology.Validate.
const (
	// MaxNodes is the most nodes a topology may have.
	MaxNodes = 100
	// MaxTimes is the most calls per request a node may make to one child.
	MaxTimes = 10
	// MinAttemptTimeout and MaxAttemptTimeout bound a call's
	// attemptTimeout: below a millisecond yarpc's HTTP TTL header (whole
	// milliseconds) cannot carry it to the callee.
	MinAttemptTimeout = time.Millisecond
	MaxAttemptTimeout = time.Minute
	// MaxWorkers and MaxQueue bound a node's capacity.
	MaxWorkers = 1024
	MaxQueue   = 100000
	// MinServiceTime and MaxServiceTime bound a worker's time per request.
	MinServiceTime = time.Microsecond
	MaxServiceTime = 10 * time.Second
	// MaxRate is the most root requests per second of open-loop load.
	MaxRate = 5000
	// MinDuration and MaxDuration bound a run of open-loop load; a
	// trigger's at and for are within MaxDuration too.
	MinDuration = time.Second
	MaxDuration = 10 * time.Minute
	// MinTriggerFor is the shortest trigger.
	MinTriggerFor = time.Millisecond
	// MaxSlowFactor is the most a slow trigger multiplies a node's
	// service time by.
	MaxSlowFactor = 1000
	// MaxInstances is the most instances a node may run.
	MaxInstances = 16
)

// Peer lists by which callers reach a node's instances (Node.PeerList):
// the ones yarpc ships.
const (
	// PeerRoundRobin is yarpc's peer/roundrobin: each call to the next
	// instance in turn. The default.
	PeerRoundRobin = "round-robin"
	// PeerFewestPending is yarpc's peer/pendingheap: each call to the
	// instance with the fewest requests pending, so that an instance
	// that fails fast attracts traffic.
	PeerFewestPending = "fewest-pending"
	// PeerTwoRandomChoices is yarpc's peer/tworandomchoices: the less
	// busy of two instances drawn at random.
	PeerTwoRandomChoices = "two-random-choices"
	// PeerRandom is yarpc's peer/randpeer: an instance drawn at random.
	PeerRandom = "random"
)

// PeerLists returns the peer lists Node.PeerList takes.
func PeerLists() []string {
	return []string{PeerRoundRobin, PeerFewestPending, PeerTwoRandomChoices, PeerRandom}
}

// What a node with a capacity does with a queued request whose caller has
// given up (its context is done): Node.Abandoned.
const (
	// AbandonedServe serves it anyway: when it reaches the head of the
	// queue a worker spends the service time on it, as a handler blocked
	// on a lock or a pool that ignores its context. The default.
	AbandonedServe = "serve"
	// AbandonedLeave drops it from the queue as soon as its context is
	// done, as a pool that honours the context.
	AbandonedLeave = "leave"
)

// Kinds of Trigger.
const (
	// TriggerSlow multiplies the node's service time by Factor: a
	// capacity cut. The node needs a capacity.
	TriggerSlow = "slow"
	// TriggerFail fails every request the node serves, with its failCode,
	// after its calls (as its own failures).
	TriggerFail = "fail"
	// TriggerCrash stops the node's dispatcher (its queued requests are
	// lost) and starts it again on the same port at the trigger's end.
	TriggerCrash = "crash"
)

// DefaultFailCode is the code of a node's own failure when its topology
// names none.
const DefaultFailCode = "unavailable"

// Topology is a call graph of services, as read from YAML: a tree or a DAG
// whose first node is the root, the one the simulator's client calls.
//
// Every node serves one procedure. For each request it calls its children,
// in the order listed, each as many times as its Call says, then fails with
// its own probability (after the calls, as in docs/DESIGN.md); otherwise it
// returns the error of the first failed call to a child that is not soft,
// if any, else success. A node that hangs never answers: after its calls
// it waits until its request's context is done, so each attempt to it
// ends by its caller's per-attempt timeout (a call's attemptTimeout) or
// deadline. Nothing retries unless a policy (see Policy) says so.
//
//	name: example
//	description: A calls B twice and a cache C that it can do without.
//	nodes:
//	  - name: A
//	    calls: [{to: B, times: 2}, {to: C, soft: true, attemptTimeout: 20ms}]
//	  - name: B
//	    fail: 0.1          # fails 10% of its requests
//	  - name: C
//	    hang: true         # never answers
type Topology struct {
	// Name names the topology in output.
	Name string `yaml:"name" json:"name"`
	// Description says what the topology shows.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Nodes are the services; the first one is the root.
	Nodes []Node `yaml:"nodes" json:"nodes"`
	// Rate, when positive, makes the load open-loop: root requests arrive
	// as a Poisson process of Rate per second, whatever becomes of the
	// earlier ones (Options.Rate, -rate, takes precedence). At most
	// MaxRate. Default 0: the closed loop of Options.Requests and
	// Options.Concurrency.
	Rate float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	// Duration is how long open-loop load lasts, e.g. "12s"
	// (Options.Duration, -duration, takes precedence), between
	// MinDuration and MaxDuration. Default DefaultDuration.
	Duration time.Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
}

// Node is one service of a Topology.
type Node struct {
	// Name is unique in the topology (letters, digits, '-', '_'; case is
	// ignored when comparing). The node's yarpc service is
	// "stormsim-" + the lower-cased name.
	Name string `yaml:"name" json:"name"`
	// Calls are the node's children, in the order it calls them.
	Calls []Call `yaml:"calls,omitempty" json:"calls,omitempty"`
	// Fail is the probability, 0 to 1, that the node's own work fails on
	// a request, drawn independently for every request it serves.
	// Default 0.
	Fail float64 `yaml:"fail,omitempty" json:"fail,omitempty"`
	// FailCode is the yarpc code of the node's own failure, by the names
	// yarpcerrors.Code.UnmarshalText reads. It must be a failure (a server
	// fault in ownership's code table) that the default retry policies
	// retry (unavailable, internal, unknown) or that is not retryable by
	// nature (data-loss). An answer such as not-found is no failure.
	// Default "unavailable".
	FailCode string `yaml:"failCode,omitempty" json:"failCode,omitempty"`
	// Errown says whether the node runs errown under the ownership
	// policies; a node that does not still retries, with package retry
	// blind to claims as any retry library that does not know errown.
	// Default true.
	Errown *bool `yaml:"errown,omitempty" json:"errown,omitempty"`
	// Retry says whether the node has a retry policy for its calls.
	// Default true.
	Retry *bool `yaml:"retry,omitempty" json:"retry,omitempty"`
	// DropContext makes the node call its children with a fresh context
	// (same deadline, nothing else), as a handler that loses its request
	// context does: errown cannot tie those calls to the request.
	DropContext bool `yaml:"dropContext,omitempty" json:"dropContext,omitempty"`
	// Hang makes the node never answer: it serves the request (and calls
	// its children) and then waits until the request's context is done,
	// and its error, deadline-exceeded, reaches nobody: its caller's
	// attempt has timed out. A node that hangs cannot also fail (fail,
	// failCode). Every root request that reaches it fails with
	// deadline-exceeded.
	Hang bool `yaml:"hang,omitempty" json:"hang,omitempty"`
	// Capacity, when set, makes the node's work finite: each request
	// waits in a bounded FIFO queue for one of the node's workers, which
	// spends the service time on it before the node makes its calls.
	// Default none: the node serves every request at once.
	Capacity *Capacity `yaml:"capacity,omitempty" json:"capacity,omitempty"`
	// Abandoned says what the node does with a queued request whose
	// caller has given up: AbandonedServe (default) or AbandonedLeave.
	// It needs a capacity.
	Abandoned string `yaml:"abandoned,omitempty" json:"abandoned,omitempty"`
	// Triggers are the node's timeline under open-loop load: each starts
	// At after the load's start and lasts For. Triggers of one kind do
	// not overlap.
	Triggers []Trigger `yaml:"triggers,omitempty" json:"triggers,omitempty"`
	// Instances is how many instances run the node, 1 to MaxInstances,
	// each its own yarpc dispatcher on its own port with its own errown
	// (its own budget and memory) and its own capacity; its callers reach
	// them through a yarpc peer list (PeerList). Default 1.
	Instances int `yaml:"instances,omitempty" json:"instances,omitempty"`
	// Faulty, when set, is how many of the node's instances (the first
	// ones, 1 to Instances-1) have its faults: fail, failCode and hang
	// hold for them only, the others are healthy. It needs one of those
	// faults. Default 0: every instance has them.
	Faulty int `yaml:"faulty,omitempty" json:"faulty,omitempty"`
	// PeerList is how the node's callers choose among its instances:
	// PeerRoundRobin (default), PeerFewestPending, PeerTwoRandomChoices
	// or PeerRandom. It needs more than one instance.
	PeerList string `yaml:"peerList,omitempty" json:"peerList,omitempty"`
}

// instances returns how many instances run the node.
func (n Node) instances() int { return cmp.Or(n.Instances, 1) }

// Capacity is a node's finite capacity: Workers serve the requests one at
// a time each, ServiceTime per request; up to Queue more wait, first in
// first out; a request that finds the queue full is answered
// resource-exhausted at once.
//
//	capacity: {workers: 2, serviceTime: 5ms, queue: 1000}
type Capacity struct {
	// Workers is the requests served at once, 1 to MaxWorkers.
	Workers int `yaml:"workers" json:"workers"`
	// ServiceTime is a worker's time per request, e.g. "5ms", between
	// MinServiceTime and MaxServiceTime.
	ServiceTime time.Duration `yaml:"serviceTime" json:"serviceTime"`
	// Queue is the most requests waiting for a worker, 0 to MaxQueue.
	Queue int `yaml:"queue" json:"queue"`
}

// Trigger is one event of a node's timeline under open-loop load.
//
//	triggers:
//	  - {kind: slow, at: 3s, for: 2s, factor: 10}
type Trigger struct {
	// Kind is TriggerSlow, TriggerFail or TriggerCrash.
	Kind string `yaml:"kind" json:"kind"`
	// At is when the trigger starts, from the start of the load.
	At time.Duration `yaml:"at" json:"at"`
	// For is how long it lasts, at least MinTriggerFor.
	For time.Duration `yaml:"for" json:"for"`
	// Factor multiplies the service time under TriggerSlow, above 1 and
	// at most MaxSlowFactor; the other kinds take none.
	Factor float64 `yaml:"factor,omitempty" json:"factor,omitempty"`
	// Instances, when set, is how many of the node's instances (the
	// first ones, 1 to Node.Instances) the trigger hits: a partial
	// failure. Default 0: every instance.
	Instances int `yaml:"instances,omitempty" json:"instances,omitempty"`
}

// End returns when the trigger ends, from the start of the load.
func (t Trigger) End() time.Duration { return t.At + t.For }

// Call is an edge of a Topology: a node calling a child. In YAML a call is
// either the child's name or a map with the fields below.
type Call struct {
	// To is the child's name. Required.
	To string `yaml:"to" json:"to"`
	// Times is the calls made to the child per request. Default 1.
	Times int `yaml:"times,omitempty" json:"times,omitempty"`
	// Soft marks a fail-open edge: the caller ignores the child's failure.
	Soft bool `yaml:"soft,omitempty" json:"soft,omitempty"`
	// AttemptTimeout limits each attempt of a call on this edge, e.g.
	// "40ms" (a Go duration), between MinAttemptTimeout and
	// MaxAttemptTimeout; the caller needs a retry policy. Under errown the
	// hop's retry policy has it as retry.PolicyConfig.AttemptTimeout; a
	// hop blind to claims times its attempts out as a retry library that
	// knows nothing of errown (see Policy). Default none: an attempt lasts
	// as long as the caller's own deadline.
	AttemptTimeout time.Duration `yaml:"attemptTimeout,omitempty" json:"attemptTimeout,omitempty"`
}

// UnmarshalYAML reads a Call from a child's name or from a map.
func (c *Call) UnmarshalYAML(unmarshal func(interface{}) error) error {
	var name string
	if err := unmarshal(&name); err == nil {
		*c = Call{To: name}
		return nil
	}
	// Call's fields, with the timeout as written: yaml.v2 would read a
	// bare number as nanoseconds, and say of a bad one only that it is
	// no time.Duration.
	var raw struct {
		To             string `yaml:"to"`
		Times          int    `yaml:"times"`
		Soft           bool   `yaml:"soft"`
		AttemptTimeout string `yaml:"attemptTimeout"`
	}
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*c = Call{To: raw.To, Times: raw.Times, Soft: raw.Soft}
	if raw.AttemptTimeout != "" {
		d, err := time.ParseDuration(raw.AttemptTimeout)
		if err != nil {
			return fmt.Errorf("call to %q: attemptTimeout: must be a duration such as 40ms, got %q", raw.To, raw.AttemptTimeout)
		}
		c.AttemptTimeout = d
	}
	return nil
}

// runsErrown reports whether the node runs errown under the ownership
// policies.
func (n Node) runsErrown() bool { return n.Errown == nil || *n.Errown }

// hidesTelemetry reports why errown's storm telemetry at the root of t
// may be unknown: a node without errown, one that drops its context, or
// one that hangs (a timeout brings no figures back); "" when errown sees
// the whole graph.
func (t *Topology) hidesTelemetry() string {
	for _, n := range t.Nodes {
		switch {
		case !n.runsErrown():
			return n.Name + " runs no errown"
		case n.DropContext:
			return n.Name + " drops its context"
		case n.Hang:
			return n.Name + " hangs"
		}
		for _, c := range n.Calls {
			if c.AttemptTimeout > 0 {
				return n.Name + " times its attempts out"
			}
		}
	}
	return ""
}

// retries reports whether the node has a retry policy.
func (n Node) retries() bool { return n.Retry == nil || *n.Retry }

// ParseTopology reads a Topology from YAML and validates it. Unknown keys
// are errors.
func ParseTopology(b []byte) (*Topology, error) {
	var t Topology
	if err := yaml.UnmarshalStrict(b, &t); err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Chain returns the straight chain of the first table of docs/DESIGN.md's kind:
// depth nodes named A, B, ..., one call per hop, the node at failDepth
// failing every request. It is not validated.
func Chain(depth, failDepth int) *Topology {
	t := &Topology{
		Name:        "chain",
		Description: fmt.Sprintf("a chain of %d nodes, %s failing every request", depth, nodeName(failDepth)),
		Nodes:       make([]Node, depth),
	}
	for d := range t.Nodes {
		t.Nodes[d].Name = nodeName(d)
		if d+1 < depth {
			t.Nodes[d].Calls = []Call{{To: nodeName(d + 1)}}
		}
		if d == failDepth {
			t.Nodes[d].Fail = 1
		}
	}
	return t
}

// nodeName returns the name of the chain node at depth d: "A" for the root.
func nodeName(d int) string { return string(rune('A' + d)) }

// Clone returns a deep copy of t, to change without touching t.
func (t *Topology) Clone() *Topology {
	c := *t
	c.Nodes = make([]Node, len(t.Nodes))
	for i, n := range t.Nodes {
		n.Calls = append([]Call(nil), n.Calls...)
		n.Triggers = append([]Trigger(nil), n.Triggers...)
		if n.Capacity != nil {
			capacity := *n.Capacity
			n.Capacity = &capacity
		}
		c.Nodes[i] = n
	}
	return &c
}

// Node returns the node named name (case ignored), or nil.
func (t *Topology) Node(name string) *Node {
	for i := range t.Nodes {
		if strings.EqualFold(t.Nodes[i].Name, name) {
			return &t.Nodes[i]
		}
	}
	return nil
}

var _nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Validate reports every problem of t at once, each naming the node and
// field, e.g. `topology "x": nodes[2] (C).fail: must be between 0 and 1,
// got 2`.
func (t *Topology) Validate() error {
	_, err := compile(t)
	return err
}

// graph is a validated Topology compiled for the simulator and the
// analytic model.
type graph struct {
	t     *Topology
	nodes []gnode
	edges []gedge
	// order lists the nodes children first: every node after all it calls.
	order []int
}

type gnode struct {
	name      string
	depth     int // shortest distance from the root
	calls     []gcall
	fail      float64
	code      yarpcerrors.Code
	retryable bool // the own failure's code is worth a retry
	errown    bool
	retry     bool
	drop      bool
	hang      bool
	capacity  *Capacity // nil: unlimited
	leave     bool      // abandoned queued requests leave the queue
	triggers  []Trigger
	instances int    // at least 1
	faulty    int    // instances with the node's faults: the first ones
	peerList  string // how callers choose among the instances
}

// partial reports whether the node's instances differ: some have its
// faults or a trigger that others do not.
func (n gnode) partial() bool {
	if n.faulty < n.instances {
		return true
	}
	for _, tr := range n.triggers {
		if tr.Instances > 0 && tr.Instances < n.instances {
			return true
		}
	}
	return false
}

type gcall struct {
	child          int
	times          int
	soft           bool
	attemptTimeout time.Duration
	edge           int
}

// gedge is a caller→callee hop.
type gedge struct{ from, to int }

// compile validates t and compiles it.
func compile(t *Topology) (*graph, error) {
	var errs error
	add := func(format string, args ...interface{}) {
		errs = multierr.Append(errs, fmt.Errorf("topology %q: "+format, append([]interface{}{t.Name}, args...)...))
	}
	if len(t.Nodes) == 0 {
		add("nodes: must not be empty")
		return nil, errs
	}
	if len(t.Nodes) > MaxNodes {
		add("nodes: at most %d, got %d", MaxNodes, len(t.Nodes))
	}
	if !(t.Rate >= 0 && t.Rate <= MaxRate) { // also rejects NaN
		add("rate: must be between 0 and %d root requests per second, got %v", MaxRate, t.Rate)
	}
	if t.Duration != 0 && (t.Duration < MinDuration || t.Duration > MaxDuration) {
		add("duration: must be between %v and %v (a duration such as 12s), got %v", MinDuration, MaxDuration, t.Duration)
	}
	g := &graph{t: t, nodes: make([]gnode, len(t.Nodes))}
	index := make(map[string]int, len(t.Nodes))
	for i, n := range t.Nodes {
		at := fmt.Sprintf("nodes[%d] (%s)", i, n.Name)
		if !_nameRE.MatchString(n.Name) {
			add("nodes[%d].name: must be 1 to 32 letters, digits, '-' or '_', got %q", i, n.Name)
		}
		if j, dup := index[strings.ToLower(n.Name)]; dup {
			add("%s.name: already used by nodes[%d]", at, j)
		} else {
			index[strings.ToLower(n.Name)] = i
		}
		if !(n.Fail >= 0 && n.Fail <= 1) { // also rejects NaN
			add("%s.fail: must be between 0 and 1, got %v", at, n.Fail)
		}
		code, retryable, err := failCode(n.FailCode)
		if err != nil {
			add("%s.failCode: %v", at, err)
		}
		if n.Hang && n.Fail != 0 {
			add("%s.fail: a node that hangs never answers, so it cannot fail: drop fail or hang, got %v", at, n.Fail)
		}
		if n.Hang && n.FailCode != "" {
			add("%s.failCode: a node that hangs never answers with a code: drop failCode or hang, got %q", at, n.FailCode)
		}
		for _, e := range multierr.Errors(n.validateCapacity()) {
			add("%s.%v", at, e)
		}
		for _, e := range multierr.Errors(n.validateInstances()) {
			add("%s.%v", at, e)
		}
		faulty := n.instances()
		if n.Faulty > 0 {
			faulty = n.Faulty
		}
		g.nodes[i] = gnode{
			name: n.Name, fail: n.Fail, code: code, retryable: retryable,
			errown: n.runsErrown(), retry: n.retries(), drop: n.DropContext, hang: n.Hang,
			capacity: n.Capacity, leave: n.Abandoned == AbandonedLeave, triggers: n.Triggers,
			instances: n.instances(), faulty: faulty, peerList: cmp.Or(n.PeerList, PeerRoundRobin),
		}
	}
	for i, n := range t.Nodes {
		seen := make(map[int]bool, len(n.Calls))
		for j, c := range n.Calls {
			at := fmt.Sprintf("nodes[%d] (%s).calls[%d]", i, n.Name, j)
			child, ok := index[strings.ToLower(c.To)]
			switch {
			case !ok:
				add("%s.to: no node named %q", at, c.To)
				continue
			case child == i:
				add("%s.to: a node cannot call itself, got %q", at, c.To)
				continue
			case seen[child]:
				add("%s.to: %q is already called; use times", at, c.To)
				continue
			}
			seen[child] = true
			times := c.Times
			times = cmp.Or(times, 1)
			if times < 1 || times > MaxTimes {
				add("%s.times: must be between 1 and %d, got %d", at, MaxTimes, c.Times)
			}
			switch {
			case c.AttemptTimeout == 0:
			case c.AttemptTimeout < MinAttemptTimeout || c.AttemptTimeout > MaxAttemptTimeout:
				add("%s.attemptTimeout: must be between %v and %v (a duration such as 40ms), got %v", at, MinAttemptTimeout, MaxAttemptTimeout, c.AttemptTimeout)
			case !n.retries():
				add("%s.attemptTimeout: is part of a retry policy, and %s has none (retry: false), got %v", at, n.Name, c.AttemptTimeout)
			}
			g.nodes[i].calls = append(g.nodes[i].calls, gcall{child: child, times: times, soft: c.Soft, attemptTimeout: c.AttemptTimeout, edge: len(g.edges)})
			g.edges = append(g.edges, gedge{from: i, to: child})
		}
	}
	if errs != nil {
		return nil, errs
	}
	if err := g.sort(); err != nil {
		add("%v", err)
		return nil, errs
	}
	g.depths()
	for i, n := range g.nodes {
		if n.depth < 0 {
			add("nodes[%d] (%s): not reachable from the root %s", i, n.name, g.nodes[0].name)
		}
	}
	return g, errs
}

// failCode reads a FailCode: the code and whether it is retried, by the
// code table (wire.Info). A node's own failure must be a failure: an
// answer (not-found, invalid-argument...) is not one, and a code the
// default policies do not retry though it is retryable by nature
// (resource-exhausted), or one the lab's clients read as their own
// (deadline-exceeded), would not be the failure the figures model.
func failCode(name string) (yarpcerrors.Code, bool, error) {
	name = cmp.Or(name, DefaultFailCode)
	var c yarpcerrors.Code
	if err := c.UnmarshalText([]byte(name)); err != nil {
		return yarpcerrors.CodeUnavailable, true, fmt.Errorf("unknown yarpc code, got %q", name)
	}
	info := wire.Info(c)
	switch {
	case info.Class != wire.ClassFailure:
		return yarpcerrors.CodeUnavailable, true, fmt.Errorf("must be a failure (a server fault), not an answer, got %q", name)
	case info.RetriedByDefault && c != yarpcerrors.CodeDeadlineExceeded:
		return c, true, nil
	case !info.RetryableByNature:
		return c, false, nil // a failure not retryable by nature: data-loss
	default:
		return yarpcerrors.CodeUnavailable, true, fmt.Errorf("must be unavailable, internal, unknown or data-loss, got %q", name)
	}
}

var errCycle = errors.New("calls: the graph has a cycle")

// sort fills g.order, children first, or reports a cycle through the
// names of its nodes.
func (g *graph) sort() error {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(g.nodes))
	var path []int
	var visit func(int) error
	visit = func(i int) error {
		switch state[i] {
		case done:
			return nil
		case onPath:
			start := 0
			for k, p := range path {
				if p == i {
					start = k
				}
			}
			names := make([]string, 0, len(path)-start+1)
			for _, p := range append(path[start:], i) {
				names = append(names, g.nodes[p].name)
			}
			return fmt.Errorf("%w: %s", errCycle, strings.Join(names, " → "))
		}
		state[i] = onPath
		path = append(path, i)
		for _, c := range g.nodes[i].calls {
			if err := visit(c.child); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		g.order = append(g.order, i)
		return nil
	}
	for i := range g.nodes {
		if err := visit(i); err != nil {
			return err
		}
	}
	return nil
}

// depths sets every node's shortest distance from the root, -1 for a node
// the root cannot reach.
func (g *graph) depths() {
	for i := range g.nodes {
		g.nodes[i].depth = -1
	}
	g.nodes[0].depth = 0
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, c := range g.nodes[i].calls {
			if g.nodes[c.child].depth < 0 {
				g.nodes[c.child].depth = g.nodes[i].depth + 1
				queue = append(queue, c.child)
			}
		}
	}
}

// mostOnOnePath returns the most edges for which marked is true on one
// path from the root to a leaf: the storm radius, per call path, of a
// root request with a retry on every marked edge. Marked edges on sibling
// paths do not add up.
func (g *graph) mostOnOnePath(marked func(e int) bool) int {
	most := make([]int, len(g.nodes)) // on one path from each node down
	for _, i := range g.order {
		for _, c := range g.nodes[i].calls {
			n := most[c.child]
			if marked(c.edge) {
				n++
			}
			most[i] = max(most[i], n)
		}
	}
	return most[0]
}

// edgeName returns "A→B" for edge e.
func (g *graph) edgeName(e int) string {
	return g.nodes[g.edges[e].from].name + "→" + g.nodes[g.edges[e].to].name
}

// failCodes returns the codes a root request can fail with: the codes of
// the nodes' own failures, and deadline-exceeded when a node hangs.
func (g *graph) failCodes() map[yarpcerrors.Code]bool {
	codes := make(map[yarpcerrors.Code]bool)
	for _, n := range g.nodes {
		if n.fail > 0 {
			codes[n.code] = true
		}
		if n.hang {
			codes[yarpcerrors.CodeDeadlineExceeded] = true
		}
	}
	return codes
}

// partial reports whether a node of g runs instances that differ (see
// gnode.partial).
func (g *graph) partial() bool {
	for _, n := range g.nodes {
		if n.partial() {
			return true
		}
	}
	return false
}

// capacity reports whether a node of g has a capacity or triggers.
func (g *graph) capacity() bool {
	for _, n := range g.nodes {
		if n.capacity != nil || len(n.triggers) > 0 {
			return true
		}
	}
	return false
}

// timed reports whether the fate of a request turns on time: a node hangs,
// has a capacity or a timeline of triggers, or a call has a per-attempt
// timeout.
func (g *graph) timed() bool {
	for _, n := range g.nodes {
		if n.hang || n.capacity != nil || len(n.triggers) > 0 {
			return true
		}
		for _, c := range n.calls {
			if c.attemptTimeout > 0 {
				return true
			}
		}
	}
	return false
}

// validateCapacity reports every problem of the node's capacity,
// abandoned mode and triggers, each naming its field.
func (n Node) validateCapacity() error {
	var errs error
	add := func(format string, args ...interface{}) {
		errs = multierr.Append(errs, fmt.Errorf(format, args...))
	}
	if c := n.Capacity; c != nil {
		if c.Workers < 1 || c.Workers > MaxWorkers {
			add("capacity.workers: must be between 1 and %d, got %d", MaxWorkers, c.Workers)
		}
		if c.ServiceTime < MinServiceTime || c.ServiceTime > MaxServiceTime {
			add("capacity.serviceTime: must be between %v and %v (a duration such as 5ms), got %v", MinServiceTime, MaxServiceTime, c.ServiceTime)
		}
		if c.Queue < 0 || c.Queue > MaxQueue {
			add("capacity.queue: must be between 0 and %d, got %d", MaxQueue, c.Queue)
		}
	}
	switch {
	case n.Abandoned == "":
	case n.Abandoned != AbandonedServe && n.Abandoned != AbandonedLeave:
		add("abandoned: must be %s or %s, got %q", AbandonedServe, AbandonedLeave, n.Abandoned)
	case n.Capacity == nil:
		add("abandoned: is what a node with a capacity does with its queue, and %s has none, got %q", n.Name, n.Abandoned)
	}
	for k, tr := range n.Triggers {
		at := fmt.Sprintf("triggers[%d]", k)
		switch tr.Kind {
		case TriggerSlow:
			if n.Capacity == nil {
				add("%s.kind: slow multiplies a capacity's service time, and %s has none", at, n.Name)
			}
			if !(tr.Factor > 1 && tr.Factor <= MaxSlowFactor) { // also rejects NaN
				add("%s.factor: must be above 1 and at most %d, got %v", at, MaxSlowFactor, tr.Factor)
			}
		case TriggerFail, TriggerCrash:
			if tr.Factor != 0 {
				add("%s.factor: only a slow trigger has one, got %v", at, tr.Factor)
			}
			if tr.Kind == TriggerFail && n.Hang {
				add("%s.kind: a node that hangs never answers, so it cannot fail", at)
			}
		default:
			add("%s.kind: must be %s, %s or %s, got %q", at, TriggerSlow, TriggerFail, TriggerCrash, tr.Kind)
		}
		if tr.At < 0 || tr.At > MaxDuration {
			add("%s.at: must be between 0s and %v (a duration such as 3s), got %v", at, MaxDuration, tr.At)
		}
		if tr.For < MinTriggerFor || tr.For > MaxDuration {
			add("%s.for: must be between %v and %v (a duration such as 2s), got %v", at, MinTriggerFor, MaxDuration, tr.For)
		}
		for j, prev := range n.Triggers[:k] {
			if prev.Kind == tr.Kind && tr.At < prev.End() && prev.At < tr.End() {
				add("%s: overlaps triggers[%d], of the same kind %s", at, j, tr.Kind)
			}
		}
	}
	return errs
}

// validateInstances reports every problem of the node's instances,
// faulty instances, peer list and triggers' instances, each naming its
// field.
func (n Node) validateInstances() error {
	var errs error
	add := func(format string, args ...interface{}) {
		errs = multierr.Append(errs, fmt.Errorf(format, args...))
	}
	if n.Instances < 0 || n.Instances > MaxInstances {
		add("instances: must be between 1 and %d, got %d", MaxInstances, n.Instances)
	}
	instances := min(max(n.instances(), 1), MaxInstances)
	switch {
	case n.Faulty == 0:
	case n.Faulty < 0 || n.Faulty >= instances:
		add("faulty: must be between 1 and instances-1 (%d), got %d", instances-1, n.Faulty)
	case n.Fail == 0 && !n.Hang && n.FailCode == "":
		add("faulty: is how many instances have the node's faults, and %s has none (fail, hang), got %d", n.Name, n.Faulty)
	}
	switch {
	case n.PeerList == "":
	case !oneOf(n.PeerList, PeerLists()):
		add("peerList: must be one of %s, got %q", strings.Join(PeerLists(), ", "), n.PeerList)
	case instances < 2:
		add("peerList: chooses among instances, and %s has one (instances), got %q", n.Name, n.PeerList)
	}
	for k, tr := range n.Triggers {
		if tr.Instances < 0 || tr.Instances > instances {
			add("triggers[%d].instances: must be between 1 and instances (%d), got %d", k, instances, tr.Instances)
		}
	}
	return errs
}

// triggered reports whether a node of t has a trigger.
func (t *Topology) triggered() bool {
	for _, n := range t.Nodes {
		if len(n.Triggers) > 0 {
			return true
		}
	}
	return false
}

// lastTriggerEnd returns when the last trigger of t ends, 0 without any.
func (t *Topology) lastTriggerEnd() time.Duration {
	var end time.Duration
	for _, n := range t.Nodes {
		for _, tr := range n.Triggers {
			end = max(end, tr.End())
		}
	}
	return end
}

// crashes reports whether the node has a crash trigger.
func (n Node) crashes() bool {
	for _, tr := range n.Triggers {
		if tr.Kind == TriggerCrash {
			return true
		}
	}
	return false
}
