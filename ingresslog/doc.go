// Package ingresslog configures the ingress log: errown keeps one log per
// inbound request in flight (Config bounds how many).
//
// In docs/DESIGN.md's data flow the inbound middleware opens a log when a
// request arrives, under a request ID errown mints (never taken from
// anything the caller sent), and puts it in the handler's context. The
// egress middleware finds it there and appends one egress entry per
// outbound call. When the handler returns, the inbound middleware closes
// the log and removes it, also when the handler panics.
//
// The logs are kept in shards, each with its own lock, its own share of
// MaxInFlight and its own ID sequence, so concurrent requests rarely
// contend. At most MaxInFlight logs are kept in all; past that a request is
// served untracked (counted in inbound.untracked): errown steps aside for
// it rather than queue or refuse it.
//
// The log itself, and the context that carries it, are errown's own
// plumbing: a handler never touches them, and reaches its request's state
// through inbound.DoNotRetry, inbound.CallerFault, outbound.Record and
// outbound.Claim.
package ingresslog
