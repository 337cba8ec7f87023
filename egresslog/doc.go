// Package egresslog records the outbound calls a service makes while it
// serves one inbound request.
//
// In DESIGN.md's data flow it sits between the two middlewares: the egress
// (outbound) middleware appends one Entry per logical outbound call to the
// Log of the inbound request the call was made for, and the inbound
// middleware reads the Log when the handler has returned. The retry
// middleware, which runs inside the egress middleware, reports what it did
// for the call in a CallState: returned straight to the egress middleware,
// or through the call's context when other middleware sits between them.
package egresslog
