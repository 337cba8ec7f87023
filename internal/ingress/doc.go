// Package ingress is errown's unary inbound middleware (Middleware), which
// package inbound configures and errown.New builds: it opens each
// request's IngressLog (reqlog.Log, bounded by inbound.IngressConfig), runs the
// handler and, when the handler returns an error, decides the request's
// claim (Decide over the failed calls the egress log kept) and writes
// it, the storm figures and the no-retry signal in application headers on
// the response. It also keeps the operators' lists of the latest claim
// decisions and root storms (inbound.Decision, inbound.Storm), and the
// admission control of inbound.AdmissionConfig.
//
// In docs/DESIGN.md's data flow it is the first and the last errown step
// of a request; the metrics it emits are listed in package inbound's
// documentation.
package ingress
