// Package ingresslog configures the ingress log: errown keeps one log per
// inbound request in flight (Config bounds how many).
//
// In docs/DESIGN.md's data flow the inbound middleware opens a log when a
// request arrives and puts it in the handler's context (nothing the
// caller sent names or finds it). The
// egress middleware finds it there and appends one egress entry per
// outbound call. When the handler returns, the inbound middleware closes
// the log and removes it, also when the handler panics.
//
// The logs are counted in shards, each an atomic count of its own with
// its own share of MaxInFlight, so concurrent requests rarely contend. At most MaxInFlight logs are kept in all; past that a request is
// served untracked (counted in inbound.untracked): errown steps aside for
// it rather than queue or refuse it.
//
// The log itself, and the context that carries it, are errown's own
// plumbing: a handler never touches them, and reaches its request's state
// through inbound.DoNotRetry, inbound.CallerFault, outbound.Record and
// outbound.Claim.
package ingresslog
