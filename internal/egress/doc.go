// Package egress is errown's unary egress middleware (Middleware), which
// package outbound configures and errown.New builds: for each logical
// outbound call a handler makes, it appends one calls.Entry (edge, code
// and class, attempts, the callee's claim, RCS, storm figures) to the
// egress log of the inbound request the call was made for, found in the
// call's context (reqlog.Log's Egress).
//
// In docs/DESIGN.md's data flow it wraps the retry middleware (package
// internal/retrier), which owns the call's state (retrier.CallState) and
// reports what it did in a reqlog.Result (retrier.Middleware.Run); the
// inbound middleware (package internal/ingress) reads the entries when
// the handler returns. Its metrics are listed in package outbound's
// documentation.
package egress
