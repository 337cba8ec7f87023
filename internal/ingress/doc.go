// Package ingress is errown's unary inbound middleware (Middleware),
// configured by package inbound and built by errown.New: it opens each
// request's IngressLog (reqlog.Log), runs the handler and, on an error,
// decides the claim (Decide over the egress log's failed calls) and writes
// it, the storm figures and the no-retry signal as response headers. It
// keeps the latest claim decisions and root storms for operators, and
// runs admission control (inbound.AdmissionConfig).
//
// It is the first and last errown step of a request (docs/DESIGN.md); its
// metrics are documented in package inbound.
package ingress
