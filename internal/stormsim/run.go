package stormsim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/multierr"
	"go.uber.org/yarpc/encoding/raw"
	"go.uber.org/yarpc/yarpcerrors"
)

// _body is the request body every root request carries down the chain.
var _body = []byte("storm")

// Result is what one Run measured.
type Result struct {
	Policy    Policy `json:"policy"`
	Transport string `json:"transport"`
	// Requests is the number of root requests sent.
	Requests int `json:"requests"`
	// Nodes are the nodes of the chain, root first.
	Nodes []NodeResult `json:"nodes"`
	// Elapsed is how long the requests took, setup and teardown excluded.
	Elapsed time.Duration `json:"-"`
}

// NodeResult is what one node served.
type NodeResult struct {
	Name  string `json:"name"`
	Depth int    `json:"depth"`
	// Served is the number of requests the node's handler ran.
	Served int64 `json:"served"`
	// Ratio is Served per root request.
	Ratio float64 `json:"ratio"`
}

// Ratios returns the ratio of every node, root first.
func (r Result) Ratios() []float64 {
	ratios := make([]float64, len(r.Nodes))
	for i, n := range r.Nodes {
		ratios[i] = n.Ratio
	}
	return ratios
}

// Run starts the chain o describes, sends o.Requests root requests at it
// with at most o.Concurrency in flight, stops every dispatcher it started
// (callers first) and returns what each node served.
//
// Every root request must end in the failing node's unavailable error,
// whatever the policy. When some end otherwise (a success, a timeout,
// a transport error) the measured ratios are not DESIGN.md's experiment:
// Run returns the Result with an error counting the outcomes. Run stops
// sending when ctx is done and returns ctx's error.
func Run(ctx context.Context, o Options) (_ Result, err error) {
	if err := o.Validate(); err != nil {
		return Result{}, fmt.Errorf("stormsim: %w", err)
	}
	o = o.withDefaults()
	c, err := startChain(o)
	if err != nil {
		return Result{}, fmt.Errorf("stormsim: %w", err)
	}
	defer func() {
		if stopErr := c.stop(); stopErr != nil {
			err = multierr.Append(err, fmt.Errorf("stormsim: stop: %w", stopErr))
		}
	}()

	start := time.Now()
	out := drive(ctx, o, c.client)
	res := Result{
		Policy:    o.Policy,
		Transport: o.Transport,
		Requests:  out.sent,
		Elapsed:   time.Since(start),
		Nodes:     make([]NodeResult, len(c.nodes)),
	}
	for d, n := range c.nodes {
		served := n.served.Load()
		res.Nodes[d] = NodeResult{Name: n.name, Depth: d, Served: served}
		if out.sent > 0 {
			res.Nodes[d].Ratio = float64(served) / float64(out.sent)
		}
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("stormsim: stopped after %d of %d requests: %w", out.sent, o.Requests, err)
	}
	return res, out.err()
}

// outcomes counts how the root requests ended.
type outcomes struct {
	sent       int
	unexpected map[string]int // by outcome, other than unavailable
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
	err := fmt.Errorf("stormsim: %d of %d requests did not end in the failing node's unavailable error (%s)",
		total, o.sent, strings.Join(keys, ", "))
	if o.first != nil {
		err = fmt.Errorf("%w; first: %v", err, o.first)
	}
	return err
}

// drive sends o.Requests root requests through client from o.Concurrency
// goroutines, each request with its own o.Timeout, until all are sent or
// ctx is done.
func drive(ctx context.Context, o Options, client raw.Client) outcomes {
	var (
		next, sent atomic.Int64
		mu         sync.Mutex
		out        = outcomes{unexpected: make(map[string]int)}
		wg         sync.WaitGroup
	)
	record := func(err error) {
		code := yarpcerrors.FromError(err).Code()
		if err != nil && code == yarpcerrors.CodeUnavailable {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			out.unexpected["ok"]++
			return
		}
		out.unexpected[code.String()]++
		if out.first == nil {
			out.first = err
		}
	}
	for range min(o.Concurrency, o.Requests) {
		wg.Go(func() {
			for ctx.Err() == nil && next.Add(1) <= int64(o.Requests) {
				cctx, cancel := context.WithTimeout(ctx, o.Timeout)
				_, err := client.Call(cctx, _procedure, _body)
				cancel()
				sent.Add(1)
				if ctx.Err() == nil { // a request cut short by ctx says nothing
					record(err)
				}
			}
		})
	}
	wg.Wait()
	out.sent = int(sent.Load())
	return out
}
