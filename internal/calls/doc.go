// Package calls implements the egress log (described in package
// outbound): EgressLog, the log of one inbound request's outbound calls,
// each call an Entry. It lives in the request's reqlog.Log (Egress).
//
// An EgressLog keeps up to MaxFailures failed calls, counts the rest and
// sums their storm telemetry; quietly succeeding calls take no lock.
// CloseSummary hands failures, counts and Storm, with their pooled chunk,
// to the inbound side; Summary.Release gives the chunk back.
//
// Orphans counts failed calls made outside any tracked request; Route
// holds the peers a call's attempts went to (package retrypeer).
package calls
