// Package wire is errown's rules on the wire, shared by every middleware
// and adapter: the claim, attempt, no-retry, code and storm headers
// (Parse*, Format*), a call's or handler's code and class (Result,
// CallResult, HandlerResult), retry-criteria-satisfied
// (RetryCriteriaSatisfied), and why a hop refused or declined a retry
// (Refusal, Decline). The claim decision itself is internal/ingress's
// (Decide). The public types (ownership.Claim, Storm, the code table) are
// in package ownership.
package wire
