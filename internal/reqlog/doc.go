// Package reqlog is the per-request plumbing errown's own packages share
// and its users never touch: the IngressLog of a request in flight (the
// Log the reqlog.Map holds, carried in the request's context), and the
// CallState by which the retry middleware tells the egress middleware what
// it did for one logical outbound call.
//
// In docs/DESIGN.md's data flow it is the thread between the middleware:
// the inbound middleware opens a Log (package ingresslog) and puts it in
// the handler's context; the egress middleware (package outbound) finds it
// there and appends one calls.Entry per logical call, with the
// attempts and refusals the retry middleware (package retry) recorded in a
// CallState.
//
// Map keeps the Logs in flight (ingresslog.Config bounds it). It is
// sharded: each shard has its own lock, its own share of MaxInFlight and its
// own ID sequence, and the shard of an ID is its low bits. Each request
// opens its Log in a shard picked at random, trying the next ones when it
// is full, so concurrent requests rarely contend. Past
// MaxInFlight, Open refuses and the request is served untracked.
package reqlog
