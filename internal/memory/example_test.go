package memory_test

import (
	"fmt"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/memory"
	"github.com/errown/errown/ownership"
)

func ExampleMemory() {
	m, err := memory.NewMemory(depmem.Config{MinSamples: 5})
	if err != nil {
		panic(err)
	}
	db := ownership.Edge{CallerProcedure: "checkout", Service: "db", Procedure: "query"}
	cache := ownership.Edge{CallerProcedure: "checkout", Service: "cache", Procedure: "get"}
	for i := 0; i < 10; i++ {
		m.Observe(db, true)      // checkout fails whenever db does
		m.Observe(cache, i == 0) // and hardly ever when the cache does
	}
	kinds, err := memory.NewStatic([]depmem.Declaration{{Service: "search", Kind: new(ownership.KindFailOpen)}}, m)
	if err != nil {
		panic(err)
	}
	for _, v := range kinds.Edges() {
		fmt.Printf("%v %v ratio=%.1f samples=%d source=%s\n", v.Edge, v.Kind, v.Ratio, v.CalleeFailures, v.Source)
	}
	// Output:
	// *->search::* fail-open ratio=0.0 samples=0 source=static
	// checkout->cache::get fail-open ratio=0.1 samples=10 source=local
	// checkout->db::query fail-close ratio=1.0 samples=10 source=local
}
