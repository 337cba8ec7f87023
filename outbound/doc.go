// Package outbound is errown's unary egress middleware: for each logical
// outbound call a handler makes, it appends one entry to the egress log of
// the inbound request the call was made for.
//
// In docs/DESIGN.md's data flow it wraps the retry middleware (package retry):
// the retry middleware reports its attempts and refusals to it through
// errown's own plumbing, and when the call ends this middleware reads the callee's claim and pushback from
// the final response and records edge, outcome (code and class, application
// errors such as Thrift exceptions included), claim and RCS. The inbound middleware (package
// inbound) reads those entries when the handler returns.
//
// A call whose context carries no request (a dropped context, or a request
// served untracked) and a call that ends after its request finished
// (detached work) are passed through and counted; neither panics nor
// leaks.
//
// Metrics (counters, on the scope errown is given: errown.WithScope):
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
package outbound
