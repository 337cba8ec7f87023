// Package calls implements the egress log (package outbound describes
// what it records and for whom): EgressLog, the log of one inbound
// request's outbound calls, and Entry, one logical
// call in it. An EgressLog lives in the request's reqlog.Log, the
// IngressLog (its Egress field).
//
// An EgressLog keeps the failed calls, up to MaxFailures, counts the rest,
// and sums the storm telemetry of its calls; a request whose calls all
// succeeded quietly takes no lock. CloseSummary hands the inbound side the
// failures, counts and Storm, with the pooled chunk they live in, which
// the Summary's Release gives back.
//
// Orphans counts the failed calls made outside any tracked request; Route
// holds the peers a call's attempts went to, as package retrypeer's
// chooser records them.
package calls
