// Package chaos is an application's outbound middleware at its most
// hostile, and the callees below it, for errown's tests: the shapes teams
// put between errown's outbound middleware and its innermost attempt step
// for tail latency and deadlines, each chosen per call
// from a seeded source, or from a fuzz input.
//
// Per call the middleware hedges (a second attempt after a random delay,
// the first answer returned, the other left running), abandons (returns
// at a timer while the attempt runs on), falls back to another procedure
// through the same next, replays (sends again after a failure, the body
// reset as a real retry middleware resets it), panics (before sending,
// after, or with an attempt running), or passes through. It comes as a
// yarpc middleware.UnaryOutbound, a grpc-go unary client interceptor (for
// grpcgo.WithInnerInterceptors) and an http.RoundTripper (between
// nethttp.Transport and nethttp.Attempts).
//
// Every request carries its ID (8 bytes of body, the fault mesh's
// convention, or EchoRequest.Key over grpc-go), and every answer of a
// Leaf, the callee below, echoes the ID and the procedure it was for, in
// its body, a response header and its error's message. A Ledger checks
// each answer where it is handed on, and counts any delivered to a
// request or procedure it was not for: errown recycling state an attempt
// still runs with shows up as one request's response in another.
//
// In docs/DESIGN.md's data flow it stands where the application's own
// outbound middleware stands, between errown's retry middleware and the
// innermost step; Leaf stands for the transport and the callee.
package chaos
