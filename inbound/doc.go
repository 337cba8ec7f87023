// Package inbound configures errown's unary inbound middleware (Config,
// with its edge declarations, EdgeConfig, and its admission control,
// AdmissionConfig), holds the helpers a handler calls (DoNotRetry,
// CallerFault) and the operators' view types (Decision, Storm, CallPeers,
// Losses).
// The middleware itself is errown's own: errown.Module (or errown.New)
// builds it from Config. It opens the request's ingress log, runs the
// handler and, when the handler returns an error, decides whether this
// service claims the error and says so in an application header on the
// error response.
//
// In docs/DESIGN.md's data flow it is the first and the last errown step of a
// request. The decision itself is made over the failed
// outbound calls errown's egress middleware (configured by package
// outbound) logged, each with its edge kind from the dependency memory
// (configured by package depmem); Decision.Reason names the row of the
// decision table that decided ("own failure", "retried below", ...).
//
// # Transports and encodings
//
// On TChannel, yarpc drops every response header of an error sent as a
// system error, so on that transport the middleware marks the error
// response as an application error before returning it: TChannel then
// carries the headers and the caller still gets the error with its code.
//
// Errors include application errors the encodings report without a Go
// error (a Thrift exception, a protobuf error): the middleware wraps the
// ResponseWriter (pooled) to see them, and classifies them by their IDL's
// code.
//
// A request Config.Edge declares an edge request (from outside the mesh,
// by transport, procedure or caller) is served without errown's headers:
// its attempt header is not read, and its response carries none of
// errown's headers, whatever follows below.
//
// # Root requests under admission
//
// Every request has a root key, the root request it is part of: one that
// comes with the root header (Headers.Root, default "errown-root") keeps
// its key; an edge request, or one from a caller that sent none, gets a
// new one (64 random bits). The request's calls carry it with the attempt
// header, when errown marks them (in an incident, or below one): the
// steady state still sends no errown header. Under pressure a service
// that sees its roots more than once admits whole root requests, not
// visits (WeChat's DAGOR): a root it admitted a request of before keeps
// its next visits (it may take the last slot or queue), while a root new
// to it gets only a free slot, the last one only if its key hashes below
// the admission level, and is otherwise shed (reason level). The level
// falls while started roots are refused and rises as roots start; every
// service hashes a key alike. So a root that must visit a service four
// times is not shed at one visit in six.
// A request from inside the mesh that came without a key (its caller does
// not run errown) is admitted as a visit, as before.
//
// # Metrics
//
// Counters, on the scope errown is given (errown.WithScope):
//
//	inbound.claimed       errors this service claimed
//	inbound.unclaimed     errors this service left unclaimed
//	inbound.coincidental  claimed errors whose failed calls were all on fail-open edges
//	inbound.at_least_once claimed errors with a correlated failure nobody had retried yet
//	inbound.untracked     requests served untracked because the ingress log was full
//	inbound.retried       requests that arrived as a retry (attempt header >= 2)
//	inbound.replaced_headers
//	                      responses on which the handler set or forwarded errown's
//	                      claim, no-retry or code header, which errown dropped
//	inbound.egress_overflow
//	                      failed outbound calls past the egress log's bound
//	                      (64 failed calls per request): counted, not kept
//	inbound.failed_after_denied
//	                      tagged reason: requests that failed (a server fault) after
//	                      this hop declined to retry one of their failed calls, once
//	                      per reason: a refusal (retry.denied's reasons: budget,
//	                      deadline, pushback, not-idempotent, code, body-too-large,
//	                      overload), unclaimed (the callee's error was unclaimed and
//	                      the policy had attempts left: errown suppressed the retry),
//	                      or attempt-limit (the call failed on the policy's last
//	                      attempt): what users lost, beside storm.prevented
//	inbound.shed          tagged reason and mode: requests admission control shed
//	                      (mode observe: would have shed), reason queue_full, retry,
//	                      incident, deadline, abandoned or level
//
// Gauges: ingress.in_flight, the requests tracked in flight (updated every
// second between Start and Stop), and, with admission control,
// inbound.admission.limit and inbound.admission.queue (updated as the
// limit enforced changes).
//
// # Storm telemetry
//
// Every error response carries the storm header (the
// subtree's requests served, blind to claims, retries, radius and blind
// radius), and so does a success whose subtree served more
// than its one request, or whose figures are unknown. A request without
// errown's attempt header comes from a caller without errown: a root,
// whose storm (a retry spent or suppressed below, or unknown figures) is
// recorded, tagged procedure (bounded by Config.MaxRootProcedures, then
// "_other"):
//
//	storm.requests        root requests that met a storm below (not the roots that
//	                      failed: failed_after_denied counts those a hop declined)
//	storm.unknown         those whose figures were unknown
//	storm.prevented       requests errown's decisions prevented (observe mode: would prevent)
//	storm.retries         retries spent below
//	storm.radius          histogram: the storm radius (most hops on one call path with a retry)
//	storm.blind_radius    histogram: the radius blind to claims
package inbound
