// Package nethttp gives plain net/http services errown's error ownership:
// Handler is server middleware, Transport an http.RoundTripper. Both run
// errown's own yarpc middleware, an errown.Middleware built by errown.New
// from the same configuration a yarpc service uses, through adapters
// between net/http and yarpc's transport types: ownership, the dependency
// memory, retry policies and budgets, storm telemetry and the metrics are
// errown's, on the same names, and nothing of them is re-implemented
// here.
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
// call made with another context is untracked, as in a yarpc service that
// drops its context.
//
// # Wire format
//
// The headers are those of yarpc's HTTP transport, so a net/http service
// and a yarpc service call each other and both see claims: errown's
// application headers travel as Rpc-Header-<name>, Rpc-Header-Errown-Claim,
// Rpc-Header-Errown-Storm, Rpc-Header-Errown-No-Retry and
// Rpc-Header-Errown-Code on responses, Rpc-Header-Errown-Attempt on
// requests (with errown's default names; configured names travel the same
// way). Handler sends only the headers errown decides: errown's own
// headers that the handler set, or forwarded from its callee's response,
// are dropped and counted in errown.inbound.replaced_headers, and the
// handler's other headers go out as it set them. When a yarpc caller says
// it takes an error response's headers with the error
// (Rpc-Accepts-Both-Response-Error, which yarpc's HTTP outbound sends),
// an error response also says Rpc-Both-Response-Error: true, with
// Rpc-Error-Code and Rpc-Error-Message, so that the yarpc caller keeps
// them: otherwise yarpc drops the claim. Calling a yarpc service, set the
// yarpc headers its HTTP inbound requires on the request (POST,
// Rpc-Caller, Rpc-Service, Rpc-Procedure, Rpc-Encoding) and give it a
// context with a deadline: Transport sends the time left as
// Context-TTL-MS.
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
// A response from a yarpc service carries its exact code in
// Rpc-Error-Code, which Transport reads first, and its application errors
// (Thrift exceptions) as Rpc-Status: error with their code. A handler
// whose error status is its caller's fault whatever the code says uses
// inbound.CallerFault; one that asks its callers not to retry uses
// inbound.DoNotRetry (pushback, Rpc-Header-Errown-No-Retry), which
// Transport honours as errown does. Retry-After is not read.
//
// # Buffering
//
// errown decides a claim when the handler has returned, and the claim must
// go out in the response's headers, before its body. Handler therefore
// holds back the status, headers and body, up to WithMaxBufferBytes of
// body (1 MiB by default), and writes them with errown's
// headers once errown has decided; it sets Content-Length on such a
// response when the handler did not. A handler that writes more than the
// bound, or calls Flush (or http.ResponseController's Flush), or hijacks
// the connection, has what it wrote sent at once and the rest as it
// writes it, without errown's claim and storm headers: its caller sees no
// claim and applies the missing-claim rule (a caller running errown
// retries once, within its policy, and passes the error on unclaimed), and
// the storm figures above a failure are unknown. A success sent early
// carries no storm header either, which an errown caller reads as one
// request served: when the streaming handler's own calls were retried,
// the figures above it are then low, the one case where they are wrong
// rather than unknown. errown still counts the request's outcome and
// learns from it. Streaming responses (server-sent events, large
// downloads) are served as without errown, only their errors without a
// claim.
//
// # Naming and cardinality
//
// errown knows a request by its procedure, and a callee by its service and
// procedure: they name the edges of the dependency memory, key the retry
// policies, and tag the root storm metrics. By default Handler names a
// request by the pattern of the http.ServeMux it wraps ("GET
// /orders/{id}"), else by its method and path; Transport names a callee
// by the request's Rpc-Service header or host, and the procedure by its
// Rpc-Procedure header or method and path. A path with IDs in it
// ("/orders/42") makes every ID a procedure of its own. errown's bounds
// hold whatever the names (root procedures past maxRootProcedures share
// procedure="_other"; the dependency memory tracks at most memory.maxEdges
// edges at once, evicting idle ones), but edges that churn with IDs never
// gather the samples to be classified, and their metric series pile up.
// Name requests and callees by route templates with WithProcedure and
// WithService where the defaults would carry IDs.
//
// # fx
//
// Module adapts the application's one errown.Core (or errown.Module) to
// net/http: it provides a Middleware whose Handler and Transport an fx
// application's constructors call, and no *errown.Middleware of its own.
// The configuration comes from the application's config under "errown",
// as for a yarpc service, errown starts and stops with the application,
// and start fails with errown.ErrNotWired when no constructor called
// them. An application that serves grpc-go as well adds grpcgo.Module
// beside it, on the same Core; one without Core fails with ErrNoCore.
// Beside errown.Module, Handler and Transport count as wiring too, and
// errown.Module still checks that the dispatcher carries errown's
// middleware.
//
// # Retries errown does not own
//
// An application that keeps its own retrying RoundTripper puts it between
// Transport and the base transport, and Attempts below it: errown's
// innermost attempt step, as errown's own is on a yarpc dispatcher.
//
//	client := &http.Client{Transport: nethttp.Transport(mw, appRetry(nethttp.Attempts(mw, base)))}
//
// Attempts sees every request the application's RoundTripper sends,
// counts it in the call's attempts and storm figures, and refuses a
// replay errown's rules refuse (of an unclaimed error; past the edge's
// policy, budget, pushback or deadline) before it is sent: the
// application's RoundTripper gets the previous response back, status,
// headers and body, or the previous error.
//
// # What is not covered
//
// Instances: net/http's Transport sends to the URL's host and keeps its
// connections per host, so errown cannot send a retry to another
// instance behind one host name (several DNS addresses, a load balancer):
// the retry goes where the connection pool or the load balancer sends it.
// A callee with several instances is better reached through a yarpc HTTP
// outbound with package retrypeer, or a grpc-go ClientConn with
// grpcgo.WithRoundRobin.
//
// Requests net/http's Transport itself sends again, inside one RoundTrip,
// are one attempt to errown, which neither counts nor refuses them:
// net/http re-sends only on a connection it reused, when not a byte of a
// response came back, and a request it had already written only when it
// is replayable (GET, HEAD, OPTIONS, TRACE or an Idempotency-Key header,
// with no body or a GetBody); HTTP/2 re-sends only requests the server
// did not process. A handler may have seen such a request (its server
// died before answering), but it sent no response and no claim: errown's
// rules would let a retry of it go, within the policy. An
// httptrace.ClientTrace on the request's context sees each write.
package nethttp
