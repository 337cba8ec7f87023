package debugpage_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/errown/errown"
	"github.com/errown/errown/debugpage"
)

// Mount the page beside the service's other debug pages. Tools read it
// as JSON: durations are Go duration strings.
func ExampleHandler() {
	cfg, err := errown.ConfigFromYAML([]byte(`
retry:
  policies:
    - {service: payments, maxAttempts: 2, idempotent: true}
`))
	if err != nil {
		panic(err)
	}
	mw, err := errown.New(cfg)
	if err != nil {
		panic(err)
	}
	if err := mw.Start(); err != nil {
		panic(err)
	}
	defer mw.Stop()
	srv := httptest.NewServer(debugpage.Handler(mw, "checkout"))
	defer srv.Close()

	res, err := srv.Client().Get(srv.URL + "/debug/errown?format=json")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	var page struct {
		Service string            `json:"service"`
		Budgets []json.RawMessage `json:"budgets"`
		Storms  []json.RawMessage `json:"storms"`
		Losses  json.RawMessage   `json:"losses"`
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
		panic(err)
	}
	fmt.Println(res.Header.Get("Content-Type"), page.Service)
	var budget bytes.Buffer
	if err := json.Compact(&budget, page.Budgets[0]); err != nil {
		panic(err)
	}
	fmt.Println(budget.String())
	fmt.Println(len(page.Storms), "storms") // no root request has met a storm yet
	var losses bytes.Buffer
	if err := json.Compact(&losses, page.Losses); err != nil {
		panic(err)
	}
	fmt.Println(losses.String()) // no request has failed after a declined retry yet
	// Output:
	// application/json checkout
	// {"callee":"payments","disabled":false,"requests":0,"retries":0,"succeeded":0,"refused":0,"allowed":100,"ratio":0.1,"minPerSecond":10,"window":"10s"}
	// 0 storms
	// {"lost":[],"prevented":0,"stormRequests":0}
}
