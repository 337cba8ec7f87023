// Package wire is errown's rules on the wire, shared by every middleware
// and adapter: reading and writing the claim, attempt, no-retry, code and
// storm headers (Parse*, Format*), the result of a call or a handler as a
// code and a class (Result, CallResult, HandlerResult),
// retry-criteria-satisfied (RetryCriteriaSatisfied), and why this hop
// refused or declined a retry (Refusal, Decline). The claim decision
// from a request's failed calls is the inbound middleware's
// (internal/ingress: Decide).
//
// The types these work on (ownership.Claim, Storm, the code
// table) are public in package ownership; this package is how errown's
// own middleware applies them.
package wire
