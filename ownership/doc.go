// Package ownership is errown's vocabulary: the claim an error response
// carries (Claim), a dependency edge and its kind (Edge, EdgeKind) and
// the names of the application headers errown reads and writes
// (Headers). It holds types; errown's middleware applies them.
//
// # Claims
//
// When a handler returns an error, the inbound middleware decides its
// claim from the request's failed outbound calls, each with the kind of
// its edge and whether its retry criteria were satisfied (RCS): the error
// is ClaimUnclaimed, and nobody above retries again, only when it failed
// on correlated edges (fail-close, or unknown by default), each with its
// retry criteria satisfied (a retry spent here or below, refused, or
// pointless); else ClaimClaimed, so that the caller may retry. A response
// without a readable claim is ClaimMissing, which does not stop a retry.
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
