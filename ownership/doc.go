// Package ownership is errown's vocabulary: the claim an error response
// carries (Claim), the kind of a dependency edge (Edge, EdgeKind), the storm
// figures of a subtree (Storm), errown's table of error codes (Codes,
// Class) and the application headers errown reads and writes (Headers and
// their default names).
//
// It sits at the end of the inbound path in docs/DESIGN.md's data flow: when a
// handler returns an error, the inbound middleware takes the failed
// outbound calls that the request's egress log recorded, each with the kind
// of its edge (from the dependency memory) and whether the retry criteria
// were satisfied for it (RCS), and decides whether the error is claimed
// or unclaimed (docs/DESIGN.md's decision tables). The claim travels to the
// caller in an application header; so do the storm figures.
package ownership
