// Package calls is the egress log of package egresslog: it records the outbound calls a service makes while it
// serves one inbound request.
//
// In docs/DESIGN.md's data flow it sits between the two middlewares: the egress
// (outbound) middleware appends one Entry per logical outbound call to the
// Log of the inbound request the call was made for, and the inbound
// middleware reads the Log when the handler has returned. A request's Log
// travels in its context, where only errown's own packages find it; a
// handler reaches it through outbound.Record and outbound.Claim.
//
// The inbound side needs only the calls that failed (wire.Decide and
// the dependency memory read nothing else), so a Log keeps those, up to
// MaxFailures (64) per request, and only counts the rest: a call that
// succeeded, was answered or was abandoned, with no Storm to report,
// costs one atomic compare-and-swap and no memory, and failures past the bound are counted as overflow (Counts),
// which the inbound middleware reports. A request's Log stays bounded
// however many calls its handler makes.
//
// A Log also sums the storm telemetry of its calls (AppendStorm, AddStorm,
// StormTotal). Its failures and sums live in a chunk from a pool, taken on
// the first failure or Storm. CloseSummary stops the Log from taking more
// and hands the inbound side the failures, counts and Storm, with the
// chunk, which the Summary's Release gives back once they are read
// (Close and the Log's Release do the same in two steps; a chunk never
// given back is left to the garbage collector). Late says whether a call
// came after the close. A request whose calls all succeeded quietly takes
// no lock (see Log).
package calls
