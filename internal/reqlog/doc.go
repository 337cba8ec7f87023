// Package reqlog is errown's internal per-request plumbing: the IngressLog
// of a request in flight (Log, held by Map and carried in the request's
// context), and the Result by which the retry middleware tells the egress
// middleware what it did for one logical outbound call.
//
// It threads the middleware together (docs/DESIGN.md): ingress opens a
// Log into the handler's context; egress finds it and appends one
// calls.Entry per call to its Egress, with the attempts and refusals
// internal/retrier recorded in a Result.
//
// Map bounds the Logs in flight (Config); past MaxInFlight requests are
// served untracked. With admission on, the Map watches each Log's calls
// (Map.WatchCalls): a request parks its slot while one is under way
// (Parker), and a measured one times that wait (Log.CallTime).
package reqlog
