// Package ingresslog keeps one IngressLog per inbound request in flight.
//
// In docs/DESIGN.md's data flow the inbound middleware opens a Log when a request
// arrives, under a request ID minted here (never taken from anything the
// caller sent), and puts the Log in the handler's context. The egress
// middleware finds it there and appends one egress entry per outbound call.
// When the handler returns, the inbound middleware closes the Log and
// removes it from the Map, also when the handler panics.
//
// The Map is sharded: each shard has its own lock, its own share of
// MaxInFlight and its own ID sequence, and the shard of an ID is its low
// bits. Each request opens its Log in a shard picked at random, trying
// the next ones when it is full, so concurrent requests rarely contend. The Map holds at most MaxInFlight
// logs in all; past that Open refuses and the request is served untracked.
//
// The Log itself, and the context that carries it, are errown's own
// plumbing (internal/reqlog): a handler never touches them, and reaches
// its request's state through inbound.DoNotRetry, inbound.CallerFault,
// outbound.Record and outbound.Claim.
package ingresslog
