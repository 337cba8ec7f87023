// Command stormsim runs the retry-storm experiment of DESIGN.md's first
// table on real yarpc dispatchers on 127.0.0.1 and prints, for each node of
// the chain, the requests it served per root request.
//
// With no flags it runs the seven-node chain A→…→G, D failing, under the
// three policies (naive, budget, ownership) over HTTP, and prints each
// measured ratio beside the published figure with PASS or FAIL (within
// ±0.05); it exits 1 if any node fails. With -json it prints the results
// as JSON instead: one object for one -policy, an array for all three.
//
//	go run ./cmd/stormsim -policy ownership -transport grpc -json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"

	"github.com/errown/errown/internal/stormsim"
	"go.uber.org/multierr"
)

// _tolerance is how far a measured ratio may be from the published or
// expected figure and still PASS.
const _tolerance = 0.05

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "stormsim:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	opts     stormsim.Options
	policies []stormsim.Policy
	json     bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("stormsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c      config
		policy string
	)
	fs.IntVar(&c.opts.Depth, "depth", 7, "number of nodes in the chain (A, B, ...)")
	fs.IntVar(&c.opts.FailDepth, "fail-depth", 3, "depth of the node failing every call (0 is the root)")
	fs.StringVar(&policy, "policy", "", "naive, budget or ownership; empty runs all three")
	fs.IntVar(&c.opts.Attempts, "attempts", 2, "attempts per call at every hop, the first one included")
	fs.Float64Var(&c.opts.Budget, "budget", 0.1, "retry budget ratio (budget and ownership policies)")
	fs.IntVar(&c.opts.Requests, "requests", 2000, "root requests to send")
	fs.IntVar(&c.opts.Concurrency, "concurrency", stormsim.DefaultConcurrency, "root requests in flight")
	fs.DurationVar(&c.opts.Timeout, "timeout", stormsim.DefaultTimeout, "deadline of each root request")
	fs.StringVar(&c.opts.Transport, "transport", stormsim.DefaultTransport, "http, grpc or tchannel")
	fs.BoolVar(&c.json, "json", false, "print JSON: one object for one -policy, an array for all")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	c.policies = stormsim.Policies()
	if policy != "" {
		c.policies = []stormsim.Policy{stormsim.Policy(policy)}
	}
	// Check every policy's options before running any, reporting each
	// problem once.
	var (
		err  error
		seen = make(map[string]bool)
	)
	for _, p := range c.policies {
		o := c.opts
		o.Policy = p
		for _, e := range multierr.Errors(o.Validate()) {
			if !seen[e.Error()] {
				seen[e.Error()] = true
				err = multierr.Append(err, e)
			}
		}
	}
	return c, err
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	results := make([]stormsim.Result, 0, len(c.policies))
	failed := 0
	for _, p := range c.policies {
		o := c.opts
		o.Policy = p
		res, err := stormsim.Run(ctx, o)
		if err != nil {
			return err
		}
		results = append(results, res)
		if !c.json {
			failed += printTable(stdout, o, res)
		}
	}
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if len(results) == 1 {
			return enc.Encode(results[0])
		}
		return enc.Encode(results)
	}
	if failed > 0 {
		return fmt.Errorf("%d nodes off the reference figures by more than ±%v", failed, _tolerance)
	}
	return nil
}

// printTable prints res beside the figures expected for o and returns how
// many nodes FAIL. Nodes are judged against DESIGN.md's published figures
// when o is that table's chain, else against stormsim.Expected.
func printTable(w io.Writer, o stormsim.Options, res stormsim.Result) int {
	expected := stormsim.Expected(o)
	published, isPublished := stormsim.Published(o)
	reference := expected
	if isPublished {
		reference = published
	}
	fmt.Fprintf(w, "policy %s over %s: %d requests in %v\n", res.Policy, res.Transport, res.Requests, res.Elapsed.Round(1e6))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "node\tdepth\tserved\tratio\texpected\tpublished\t\t")
	failed := 0
	for i, n := range res.Nodes {
		pub := "-"
		if isPublished {
			pub = fmt.Sprintf("%.2f", published[i])
		}
		verdict := "PASS"
		if math.Abs(n.Ratio-reference[i]) > _tolerance {
			verdict = "FAIL"
			failed++
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%s\t%s\t\n", n.Name, n.Depth, n.Served, n.Ratio, expected[i], pub, verdict)
	}
	_ = tw.Flush() // w is stdout; a failed print has nowhere better to go
	fmt.Fprintln(w)
	return failed
}
