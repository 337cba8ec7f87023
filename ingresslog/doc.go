// Package ingresslog configures errown's ingress log (Config): how many
// inbound requests errown tracks in flight at once, and in how many shards
// it counts them. The log itself, and the context that carries it, are
// errown's own plumbing and have no API of their own.
//
// The ingress log is errown's record of one inbound request in flight. In
// docs/DESIGN.md's data flow the inbound middleware opens a log when a
// request arrives and puts it in the handler's context (nothing the caller
// sent names or finds it). The egress middleware finds it there and
// appends one egress entry per outbound call (package egresslog). When the
// handler returns, the inbound middleware closes the log and removes it,
// also when the handler panics. A handler reaches its request's log
// through inbound.DoNotRetry, inbound.CallerFault, outbound.Record and
// outbound.Claim.
//
// # Bounded
//
// The logs are counted in Config.Shards shards, each an atomic count of
// its own with its own share of Config.MaxInFlight, so concurrent requests
// rarely contend. At most MaxInFlight logs are kept in all; past that a
// request is served untracked (counted in inbound.untracked): errown
// steps aside for it rather than queue or refuse it. The gauge
// ingress.in_flight reports the logs held.
package ingresslog
