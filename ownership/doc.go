// Package ownership is errown's vocabulary: the claim an error response
// carries (Claim), a dependency edge and its kind (Edge, EdgeKind) and
// the names of the application headers errown reads and writes
// (Headers). It holds types; errown's middleware applies them.
//
// # Claims
//
// In docs/DESIGN.md's data flow the claim is decided at the end of the
// inbound path: when a handler returns an error, the inbound middleware
// takes the failed outbound calls the request's egress log recorded, each
// with the kind of its edge (from the dependency memory) and whether the
// retry criteria were satisfied for it (RCS), and decides:
//
//   - no failed call: the fault is here, ClaimClaimed;
//   - only failures on fail-open edges (coincidental): ClaimClaimed;
//   - a failure on a correlated edge (fail-close, or unknown by default)
//     whose retry criteria are not satisfied: ClaimClaimed, so that the
//     caller retries (at least once);
//   - failures on correlated edges, all with their retry criteria
//     satisfied (a retry was spent, refused, or is pointless):
//     ClaimUnclaimed, and nobody above retries again.
//
// The claim travels to the caller in the claim header of the error
// response; a response without a readable one (a callee without errown,
// a header lost) is ClaimMissing, which does not stop a retry.
// docs/decisions.md has the full tables.
//
// # Codes
//
// One table says what each yarpc code means to errown: the callee's
// failure or the request's answer, whether it is retryable by nature and
// retried by default (docs/decisions.md, "Codes"). It follows
// yarpcerrors.GetFaultTypeFromCode, except resource-exhausted, a failure
// of an overloaded callee, not retried by default.
//
// # Headers
//
// Headers names the headers, each with its default: errown-claim and
// errown-storm on error responses, errown-no-retry (a callee's pushback),
// errown-code (an application error's code, where the transport drops
// it) and errown-attempt on retries and on calls in an incident. In the
// steady state none is on the wire. The same YAML keys (claimHeader,
// attemptHeader, ...) name them in every section of errown's
// configuration.
package ownership
