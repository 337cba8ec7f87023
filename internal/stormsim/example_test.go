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
	// DESIGN.md's first table: A..G, D failing, 2 attempts, 10% budget.
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
