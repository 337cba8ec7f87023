// Package reqlog is the per-request plumbing errown's own packages share
// and its users never touch: the IngressLog of a request in flight (the
// Log the reqlog.Map holds, carried in the request's context), and the
// Result by which the retry middleware tells the egress middleware what
// it did for one logical outbound call.
//
// In docs/DESIGN.md's data flow it is the thread between the middleware:
// the inbound middleware (package internal/ingress) opens a Log and puts
// it in the handler's context; the egress middleware (package
// internal/egress) finds it there and appends one calls.Entry per logical
// call to its Egress, with the attempts and refusals the retry middleware
// (package internal/retrier) recorded in a Result.
//
// Map bounds the Logs in flight (Config); past MaxInFlight the request is
// served untracked. With admission on, the Map watches each Log's outbound
// calls (Map.WatchCalls): a request parks its admission slot while one is
// under way (Parker), and a measured one times that wait (Log.CallTime).
package reqlog
