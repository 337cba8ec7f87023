// Package outboundtest is the scripted transport of errown's unit tests:
// an Outbound that answers each call from a script of Steps and records
// what it was sent.
//
// In docs/DESIGN.md's data flow an Outbound stands where the network is,
// below the retry and egress middleware: what the middleware sends
// reaches it as it would reach a transport, and what it answers goes back
// up as a callee's answer would. A test scripts the callee per attempt
// (Answer, Fail, Succeed, Delay, Block, Wait, EchoHeaders, or any Step of
// its own) and reads back the requests, copied at the time of the call:
// the middleware may reuse a request once its attempt returned, so a test
// reading the record after the call still reads what was sent.
//
// Every accessor is safe for concurrent use with calls in flight.
//
// The package imports nothing of errown's, so that any package's internal
// tests can use it.
package outboundtest
