// Package egresslog describes errown's egress log and holds its bound,
// MaxFailures; the log itself is errown's own plumbing and has no API of
// its own.
//
// The egress log is the record of the outbound calls a service makes while
// it serves one inbound request. In docs/DESIGN.md's data flow it sits
// between the two middlewares: the egress middleware (configured by
// package outbound) appends one entry per logical outbound call (edge,
// code and class, attempts, the callee's claim and RCS) to the log of the
// inbound request the call was made for, and the inbound middleware
// (configured by package inbound) reads the log when the handler has
// returned, to decide the request's claim. A request's log travels in its
// context, where only errown's own packages find it; a handler reaches it
// through outbound.Record and outbound.Claim.
//
// # Bounded
//
// The inbound side needs only the calls that failed (the claim decision and
// the dependency memory read nothing else), so a log keeps those, up to
// MaxFailures per request, and only counts the rest: a call that succeeded,
// was answered or was abandoned costs one atomic compare-and-swap and no
// memory. Failures past the bound are counted in the inbound middleware's
// inbound.egress_overflow counter, not kept, so what one request costs
// stays bounded however many calls its handler makes.
package egresslog

// MaxFailures is how many failed outbound calls the egress log of one
// request keeps. A request that makes more failed calls has the first
// MaxFailures kept for its claim decision and the rest counted.
const MaxFailures = 64
