// Package nethttp gives plain net/http services errown's error ownership:
// Handler is server middleware, Transport an http.RoundTripper. Both run
// the yarpc middleware of an errown.Middleware, built by errown.New from
// the configuration a yarpc service uses, so ownership, the dependency
// memory, retry policies and budgets, storm telemetry and the metrics are
// errown's own, on the same names.
//
//	mw, err := errown.New(cfg, errown.WithScope(scope)) // or, with fx, errown.Core and Module
//	...
//	mw.Start()
//	defer mw.Stop()
//	client := &http.Client{Transport: nethttp.Transport(mw, nil)}
//	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
//		req, _ := http.NewRequestWithContext(r.Context(), "GET", "http://inventory/items/7", nil)
//		res, err := client.Do(req) // logged against this request, retried per policy
//		...
//	})
//	http.ListenAndServe(":8080", nethttp.Handler(mw, mux))
//
// A handler's calls are tied to its request through the request's
// context: make them with r.Context(), or a context derived from it. A
// call made with another context is untracked.
//
// # Wire format
//
// The headers are those of yarpc's HTTP transport, so a net/http service
// and a yarpc service call each other and both see claims: errown's
// headers travel as Rpc-Header-<name> (with the default names,
// Rpc-Header-Errown-Claim, -Storm, -No-Retry and -Code on responses,
// Rpc-Header-Errown-Attempt on requests). Handler sends only the headers
// errown decides: errown's own headers set by the handler are dropped and
// counted in errown.inbound.replaced_headers. When a yarpc caller sends
// Rpc-Accepts-Both-Response-Error, an error response also says
// Rpc-Both-Response-Error: true, with Rpc-Error-Code and
// Rpc-Error-Message, so yarpc keeps the claim. To call a yarpc service,
// set the headers its HTTP inbound requires (POST, Rpc-Caller,
// Rpc-Service, Rpc-Procedure, Rpc-Encoding) and give the request a
// deadline: Transport sends the time left as Context-TTL-MS.
//
// # Codes
//
// errown classifies an error by its yarpc code (docs/decisions.md, "Codes"). An
// error status stands for the code yarpc's HTTP transport reads from it:
//
//	400, 422 and any other 4xx  invalid-argument (an answer)
//	401                         unauthenticated (an answer)
//	403                         permission-denied (an answer)
//	404                         not-found (an answer)
//	409                         aborted (an answer)
//	429                         resource-exhausted (a failure, not retried by default)
//	499                         cancelled (an answer)
//	500, 502 and any other 5xx  unknown (a failure, retried by default)
//	501                         unimplemented (an answer)
//	503                         unavailable (a failure, retried by default)
//	504                         deadline-exceeded (a failure, retried by default)
//
// A yarpc service's response carries its exact code in Rpc-Error-Code,
// which Transport reads first, and its application errors as Rpc-Status:
// error. A handler whose error is its caller's fault whatever the code
// uses inbound.CallerFault; one that asks its callers not to retry uses
// inbound.DoNotRetry, which Transport honours. Retry-After is not read.
//
// # Buffering
//
// errown decides the claim once the handler has returned, and it goes out
// in the response's headers, so Handler holds back the status, headers
// and body, up to WithMaxBufferBytes of body (1 MiB by default), and sets
// Content-Length when the handler did not. A handler that writes more,
// flushes or hijacks the connection has its response sent as written,
// without errown's claim and storm headers: its caller applies the
// missing-claim rule (an errown caller retries once, within its policy,
// and passes the error on unclaimed), and the storm figures above a
// failure are unknown. A success sent early reads as one request served,
// so if the streaming handler's own calls were retried, the figures above
// it are low. errown still counts the request and learns from it.
//
// # Naming and cardinality
//
// A request's procedure, and a callee's service and procedure, name the
// edges of the dependency memory, key the retry policies and tag the root
// storm metrics (defaults: WithProcedure, WithService). A path with IDs in
// it ("/orders/42") makes every ID a procedure: errown's bounds hold
// (maxRootProcedures, memory.maxEdges), but such edges never gather the
// samples to be classified, and their metric series pile up. Name them by
// route templates with WithProcedure and WithService.
//
// # fx
//
// Module adapts the application's errown.Core (or errown.Module) to
// net/http: see Module.
//
// # Retries errown does not own
//
// An application's own retrying RoundTripper goes between Transport and
// base, with Attempts below it, which holds its re-sends to errown's
// rules: see Attempts. Requests net/http's Transport itself sends again
// inside one RoundTrip are one attempt to errown (see Attempts too).
//
// Instances: net/http sends to the URL's host and keeps its connections
// per host, so errown cannot send a retry to another instance behind one
// host name. A callee with several instances is better reached through a
// yarpc HTTP outbound with package retrypeer, or a grpc-go ClientConn
// with grpcgo.WithRoundRobin.
package nethttp
