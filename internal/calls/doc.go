// Package calls implements the egress log (package outbound describes
// what it records and for whom): EgressLog, the log of one inbound
// request's outbound calls, and Entry, one logical
// call in it. An EgressLog lives in the request's reqlog.Log, the
// IngressLog (its Egress field).
//
// An EgressLog keeps the failed calls, up to MaxFailures, and
// counts the rest (Counts); a call that succeeded, was answered or was
// abandoned, with no Storm to report, costs one atomic compare-and-swap.
// A request whose calls all succeeded quietly takes no lock (see
// EgressLog).
//
// An EgressLog also sums the storm telemetry of its calls (AppendStorm,
// AddStorm, StormTotal). Its failures and sums live in a chunk from a
// pool, taken on the first failure or Storm. CloseSummary stops the
// EgressLog from taking more and hands the inbound side the failures,
// counts and Storm, with the chunk, which the Summary's Release gives
// back once they are read (Close and the EgressLog's Release do the same
// in two steps; a chunk never given back is left to the garbage
// collector). Late says whether a call came after the close.
//
// Orphans counts the failed calls made outside any tracked request; Route
// holds the peers a call's attempts went to, as package retrypeer's
// chooser records them.
package calls
