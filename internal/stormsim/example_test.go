package stormsim_test

import (
	"context"
	"fmt"

	"github.com/errown/errown/internal/stormsim"
)

func ExampleRun() {
	// Three nodes over HTTP, B failing, every hop retrying once.
	res, err := stormsim.Run(context.Background(), stormsim.Options{
		Depth:     3,
		FailDepth: 1,
		Attempts:  2,
		Requests:  10,
		Policy:    stormsim.PolicyNaive,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range res.Nodes {
		fmt.Printf("%s served %d (%.1f per request)\n", n.Name, n.Served, n.Ratio)
	}
	// Output:
	// A served 10 (1.0 per request)
	// B served 20 (2.0 per request)
	// C served 20 (2.0 per request)
}

func ExampleExpected() {
	// docs/DESIGN.md's first table: A..G, D failing, 2 attempts, 10% budget.
	for _, p := range stormsim.Policies() {
		fmt.Printf("%-9s %.2f\n", p, stormsim.Expected(stormsim.Options{
			Depth:     7,
			FailDepth: 3,
			Attempts:  2,
			Budget:    0.1,
			Requests:  1,
			Policy:    p,
		}))
	}
	// Output:
	// naive     [1.00 2.00 4.00 8.00 8.00 8.00 8.00]
	// budget    [1.00 1.10 1.21 1.33 1.33 1.33 1.33]
	// ownership [1.00 1.00 1.00 1.10 1.10 1.10 1.10]
}

func ExampleAnalyze() {
	// The shipped 25-deep chain, Y failing: load at Y and storm radius per
	// policy, computed without running a service.
	deep, err := stormsim.LoadTopology("deep")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range stormsim.Policies() {
		a, err := stormsim.Analyze(stormsim.Options{Topology: deep, Attempts: 2, Budget: 0.1, Requests: 1, Policy: p})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%-9s Y serves %.4g per request at A, radius at most %d hops\n", p, a.Nodes[24].Load, a.RadiusMax)
	}
	// Output:
	// naive     Y serves 1.678e+07 per request at A, radius at most 24 hops
	// budget    Y serves 9.85 per request at A, radius at most 24 hops
	// ownership Y serves 1.1 per request at A, radius at most 1 hops
}

func ExampleParseTopology() {
	t, err := stormsim.ParseTopology([]byte(`
name: cache
description: A calls B, and a cache C it can do without.
nodes:
  - name: A
    calls: [B, {to: C, soft: true}]
  - {name: B, fail: 0.2}
  - {name: C, fail: 0.5}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := stormsim.Analyze(stormsim.Options{Topology: t, Attempts: 2, Budget: 0.1, Requests: 1, Policy: stormsim.PolicyOwnership})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("A available %.1f%%; per request at A: B %.2f, C %.2f\n", 100*a.Availability, a.Nodes[1].Load, a.Nodes[2].Load)
	// Output:
	// A available 96.0%; per request at A: B 1.20, C 1.20
}

func ExampleScenario_Run() {
	// A named scenario in analytic mode: its headline figures beside the
	// published ones, without running a service.
	s, _ := stormsim.LookupScenario("availability")
	rep, err := s.Run(context.Background(), stormsim.ScenarioOptions{Analytic: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range rep.Figures {
		fmt.Printf("%s: %.4f (published %v)\n", f.Name, f.Value, *f.Published)
	}
	// Output:
	// availability % after retry, base 99.9%: 99.9999 (published 99.9999)
	// availability % after retry, base 99%: 99.9900 (published 99.99)
	// availability % after retry, base 95%: 99.7500 (published 99.75)
	// availability % after retry, base 90%: 99.0000 (published 99)
	// availability % after retry, base 80%: 96.0000 (published 88)
	// availability % after retry, base 70%: 91.0000 (published 77)
}
