// Package wire is errown's rules on the wire, shared by every middleware
// and adapter: reading and writing the claim, attempt, no-retry, code and
// storm headers (Parse*, Format*), the result of a call or a handler as a
// code and a class (Result, CallResult, HandlerResult), the claim
// decision (Decide) and retry-criteria-satisfied (RetryCriteriaSatisfied),
// and why this hop refused a retry (Refusal).
//
// The types these work on (ownership.Claim, ownership.Storm, the code
// table) are public in package ownership; this package is how errown's
// own middleware applies them.
package wire
