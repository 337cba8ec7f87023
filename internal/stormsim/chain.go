package stormsim

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/retry"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
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
)

// node is one service of the chain.
type node struct {
	name   string // "A", "B", ...
	depth  int
	fail   bool
	child  raw.Client // nil for the leaf
	served atomic.Int64
}

// nodeName returns the name of the node at depth d: "A" for the root.
func nodeName(d int) string { return string(rune('A' + d)) }

// serviceName returns the yarpc service name of the node at depth d.
func serviceName(d int) string { return "stormsim-" + strings.ToLower(nodeName(d)) }

// handle serves one request: count it, call the child, then fail if this
// is the failing node (after the calls below, as in DESIGN.md), else pass
// on the child's error, if any.
func (n *node) handle(ctx context.Context, body []byte) ([]byte, error) {
	n.served.Add(1)
	var err error
	if n.child != nil {
		_, err = n.child.Call(ctx, _procedure, body)
	}
	if n.fail {
		return nil, yarpcerrors.UnavailableErrorf("stormsim: %s fails every call", n.name)
	}
	if err != nil {
		return nil, yarpcerrors.FromError(err)
	}
	return nil, nil
}

// chain is a started chain of nodes and the client dispatcher calling its
// root.
type chain struct {
	nodes []*node // by depth
	// started in start order: the leaf first, the client last.
	started []*yarpc.Dispatcher
	client  raw.Client
}

// startChain builds and starts the chain o describes from the leaf up, so
// that each parent's outbound knows its child's address, then the client.
// On error everything already started is stopped.
func startChain(o Options) (_ *chain, err error) {
	c := &chain{nodes: make([]*node, o.Depth)}
	defer func() {
		if err != nil {
			err = multierr.Append(err, c.stop())
		}
	}()
	childAddr := ""
	for d := o.Depth - 1; d >= 0; d-- {
		n := &node{name: nodeName(d), depth: d, fail: d == o.FailDepth}
		c.nodes[d] = n
		cfg, addr, err := o.nodeConfig(d, childAddr)
		if err != nil {
			return nil, err
		}
		disp := yarpc.NewDispatcher(cfg.yarpc)
		if d+1 < o.Depth {
			n.child = raw.New(disp.ClientConfig(serviceName(d + 1)))
		}
		disp.Register(raw.Procedure(_procedure, n.handle))
		if err := c.start(disp, cfg.abandon); err != nil {
			return nil, fmt.Errorf("start %s: %w", cfg.yarpc.Name, err)
		}
		childAddr = addr()
		o.Logger.Debug("node started", zap.String("node", n.name), zap.String("service", cfg.yarpc.Name), zap.String("addr", childAddr))
	}

	e, err := newEndpoint(o.Transport, _clientService, false, o.Concurrency)
	if err != nil {
		return nil, err
	}
	disp := yarpc.NewDispatcher(yarpc.Config{
		Name:      _clientService,
		Outbounds: yarpc.Outbounds{serviceName(0): {Unary: e.outbound(childAddr)}},
	})
	if err := c.start(disp, e.abandon); err != nil {
		return nil, fmt.Errorf("start %s: %w", _clientService, err)
	}
	c.client = raw.New(disp.ClientConfig(serviceName(0)))
	return c, nil
}

// start starts d and records it for stop; abandon runs if d did not start.
func (c *chain) start(d *yarpc.Dispatcher, abandon func()) error {
	if err := d.Start(); err != nil {
		abandon()
		return err
	}
	c.started = append(c.started, d)
	return nil
}

// stop stops every started dispatcher in the reverse order of their start:
// callers before their callees.
func (c *chain) stop() error {
	var err error
	for i := len(c.started) - 1; i >= 0; i-- {
		err = multierr.Append(err, c.started[i].Stop())
	}
	c.started = nil
	return err
}

// nodeConfig is what building the dispatcher of one node needs.
type nodeConfig struct {
	yarpc   yarpc.Config
	abandon func()
}

// nodeConfig returns the dispatcher config of the node at depth d, whose
// child (if any) listens on childAddr, and a function returning the node's
// own address once its dispatcher has started.
func (o Options) nodeConfig(d int, childAddr string) (nodeConfig, func() string, error) {
	service := serviceName(d)
	e, err := newEndpoint(o.Transport, service, true, o.Concurrency)
	if err != nil {
		return nodeConfig{}, nil, err
	}
	cfg := yarpc.Config{Name: service, Inbounds: yarpc.Inbounds{e.inbound}}
	var policies []retry.PolicyConfig
	if d+1 < o.Depth {
		child := serviceName(d + 1)
		cfg.Outbounds = yarpc.Outbounds{child: {Unary: e.outbound(childAddr)}}
		policies = []retry.PolicyConfig{{
			Service:        child,
			MaxAttempts:    o.Attempts,
			InitialBackoff: _backoff,
			MaxBackoff:     _backoff,
		}}
	}
	cfg, err = o.withPolicy(cfg, policies)
	if err != nil {
		e.abandon()
		return nodeConfig{}, nil, fmt.Errorf("%s: %w", service, err)
	}
	return nodeConfig{yarpc: cfg, abandon: e.abandon}, e.addr, nil
}

// withPolicy adds o.Policy's middleware, retrying per policies, to cfg.
func (o Options) withPolicy(cfg yarpc.Config, policies []retry.PolicyConfig) (yarpc.Config, error) {
	noFloor := 0.0
	budget := retry.BudgetConfig{Ratio: o.Budget, MinPerSecond: &noFloor, Window: _budgetWindow}
	switch o.Policy {
	case PolicyNaive, PolicyBudget:
		if o.Policy == PolicyNaive {
			budget = retry.BudgetConfig{Disabled: true}
		}
		r, err := retry.New(retry.Config{Budget: budget, Policies: policies}, retry.WithLogger(o.Logger))
		if err != nil {
			return cfg, err
		}
		cfg.OutboundMiddleware.Unary = r
		return cfg, nil
	case PolicyOwnership:
		mw, err := errown.New(errown.Config{
			Retry: errown.RetryConfig{Budget: budget, Policies: policies},
		}, errown.WithLogger(o.Logger))
		if err != nil {
			return cfg, err
		}
		return mw.Apply(cfg), nil
	default:
		return cfg, fmt.Errorf("policy: must be one of %v, got %q", policyNames(), o.Policy)
	}
}
