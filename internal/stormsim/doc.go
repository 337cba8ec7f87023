// Package stormsim reproduces the retry-storm figures of DESIGN.md (its
// first table) on real yarpc dispatchers.
//
// Run builds a chain of services A→B→C→..., each its own yarpc.Dispatcher
// on 127.0.0.1 with an ephemeral port, over HTTP, gRPC or TChannel, raw
// encoding, one procedure. Every node counts the requests it serves, calls
// its child with the request body and then, if it is the failing node,
// returns an unavailable error (it fails after calling the nodes below it,
// as in DESIGN.md); otherwise it passes on its child's error, if any.
//
// Every hop is configured alike, under one of three policies:
//
//   - naive: a retry.Middleware on every outbound, MaxAttempts attempts,
//     no budget;
//   - budget: the same with a retry budget of the given ratio and no
//     per-second floor, over a window longer than the run;
//   - ownership: the full errown middleware (errown.New and Apply) with
//     the same retry policy and budget.
//
// The simulator's own client calls the root without retrying, N times with
// bounded concurrency, and reports how many requests each node served per
// root request. Expected gives the analytic ratios to compare with.
//
// In DESIGN.md's data flow stormsim sits outside errown: it is a user of
// the root package and of package retry, a tool and an end-to-end check.
package stormsim
