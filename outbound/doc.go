// Package outbound configures errown's unary egress middleware (Config)
// and holds the two helpers a handler calls on its request's egress log:
// Claim, the callee's claim on the latest failed call to a procedure, and
// Record, which logs a call to a dependency that is not an RPC (a
// database, a cache, a queue) as if it were one. The middleware itself is
// errown's own: errown.Module (or errown.New) builds it from Config and
// puts it on every outbound, outside the retry middleware.
//
// # The egress middleware
//
// For each logical outbound call a handler makes, the middleware appends
// one entry to the egress log of the inbound request the call was made
// for: edge, outcome (code and class), the callee's claim and pushback,
// and RCS, with the attempts and refusals the retry middleware it wraps
// reports. The inbound middleware reads those entries when the handler
// returns. A call whose context carries no request, or that ends after
// its request finished, is passed through and counted.
//
// Outside an incident a call carries no errown header; for
// Config.IncidentWindow after one on its edge, its calls carry the
// attempt header so that the callees send their storm figures. With
// Config.RefuseRepeats, a call a handler makes again to a callee whose
// same call failed unclaimed earlier in the request fails at once.
//
// # Metrics
//
// Counters, on the scope errown is given (errown.WithScope):
//
//	egress.calls      logical outbound calls
//	egress.failures   of those, calls that ended in the callee's failure (a server fault, by
//	                  ownership's code table), tagged claim=claimed|unclaimed|missing
//	egress.answers    calls that ended in the callee's answer: an error that blames the
//	                  request (not found, invalid argument...) or an application error
//	                  without a code; never a failure of the callee
//	egress.untracked  calls whose context carried no request
//	egress.late       calls that ended after their request had finished
//	egress.abandoned  calls the handler itself cancelled (not counted as failures)
//	egress.repeated_after_unclaimed
//	                  calls a handler made again to a procedure whose call had failed
//	                  unclaimed earlier in the same request (refused with
//	                  Config.RefuseRepeats)
package outbound
