// Package outboundtest is the scripted transport of errown's unit tests:
// an Outbound that answers each call from a script of Steps and records
// what it was sent.
//
// In docs/DESIGN.md's data flow an Outbound stands where the network is,
// below the retry and egress middleware: it gets what the middleware
// sends as a transport would, and its answers go back up as a callee's.
// A test scripts the callee per attempt (Answer, Fail, Succeed, Delay,
// Block, Wait, EchoHeaders, or a Step of its own) and reads back the
// requests, copied when called: the middleware may reuse a request once
// its attempt returned.
//
// Every accessor is safe for concurrent use with calls in flight.
//
// It imports nothing of errown's, so any package's internal tests can use
// it.
package outboundtest
