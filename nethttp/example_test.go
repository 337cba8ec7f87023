package nethttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/nethttp"
	"github.com/errown/errown/retry"
)

// Two plain net/http services: frontend calls inventory, which is down.
// frontend's client retries inventory once (inventory claimed its error),
// and frontend answers its own caller unclaimed, so nobody above retries.
func Example() {
	// inventory: errown on its handler only; it fails every request.
	invMW, err := errown.New(errown.Config{})
	if err != nil {
		panic(err)
	}
	_ = invMW.Start()
	defer invMW.Stop()
	var inventoryServed atomic.Int64
	inventory := httptest.NewServer(nethttp.Handler(invMW, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inventoryServed.Add(1)
		http.Error(w, "inventory is down", http.StatusServiceUnavailable)
	})))
	defer inventory.Close()

	// frontend: errown on its handler and on its client, with a retry
	// policy for inventory.
	mw, err := errown.New(errown.Config{Retry: errown.RetryConfig{Policies: []retry.PolicyConfig{{
		Service:        "inventory",
		MaxAttempts:    2,
		InitialBackoff: time.Millisecond,
		Idempotent:     new(true),
	}}}})
	if err != nil {
		panic(err)
	}
	_ = mw.Start()
	defer mw.Stop()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: nethttp.Transport(mw, base,
		nethttp.WithService(func(*http.Request) string { return "inventory" }))}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		// The request's context ties the call to the request being served.
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, inventory.URL+"/items/"+r.PathValue("id"), nil)
		res, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		fmt.Println("inventory's claim:", res.Header.Get("Rpc-Header-Errown-Claim"))
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
	})
	frontend := httptest.NewServer(nethttp.Handler(mw, mux))
	defer frontend.Close()

	// The outside caller runs no errown: frontend serves a root request.
	outside := &http.Transport{}
	defer outside.CloseIdleConnections()
	res, err := (&http.Client{Transport: outside}).Get(frontend.URL + "/orders/42")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	fmt.Println("frontend answered:", res.Status)
	fmt.Println("frontend's claim:", res.Header.Get("Rpc-Header-Errown-Claim"))
	fmt.Println("requests inventory served:", inventoryServed.Load())
	// Output:
	// inventory's claim: claimed
	// frontend answered: 503 Service Unavailable
	// frontend's claim: unclaimed
	// requests inventory served: 2
}

// retryAll is an application's own retrying RoundTripper: it sends a
// request up to four times, again after any server error.
type retryAll struct{ next http.RoundTripper }

func (rt retryAll) RoundTrip(r *http.Request) (*http.Response, error) {
	var (
		res *http.Response
		err error
	)
	for i := range 4 {
		if i > 0 && err == nil {
			_, _ = io.Copy(io.Discard, res.Body) // the failure before
			_ = res.Body.Close()
		}
		if res, err = rt.next.RoundTrip(r); err == nil && res.StatusCode < 500 {
			return res, nil
		}
	}
	return res, err
}

// An application keeps its own retrying RoundTripper, which sends a
// failed request up to four times, inside errown's Transport: Attempts,
// below it, holds it to errown's policy of two attempts. The caller gets
// the last response that was sent.
func ExampleAttempts() {
	var served atomic.Int64
	inventory := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "request %d failed", served.Add(1))
	}))
	defer inventory.Close()

	mw, err := errown.New(errown.Config{Retry: errown.RetryConfig{Policies: []retry.PolicyConfig{{
		Service:        "inventory",
		MaxAttempts:    2,
		InitialBackoff: time.Millisecond,
		Idempotent:     new(true),
	}}}})
	if err != nil {
		panic(err)
	}
	_ = mw.Start()
	defer mw.Stop()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: nethttp.Transport(mw, retryAll{next: nethttp.Attempts(mw, base)},
		nethttp.WithService(func(*http.Request) string { return "inventory" }))}

	res, err := client.Get(inventory.URL + "/items/7")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status, string(body), served.Load())
	// Output: 503 Service Unavailable request 2 failed 2
}
