// Package ownership holds errown's pure decision logic and its wire format.
//
// It sits at the end of the inbound path in docs/DESIGN.md's data flow: when a
// handler returns an error, the inbound middleware hands Decide the failed
// outbound calls that the request's egress log recorded, each with the kind
// of its edge (from the dependency memory) and whether the retry criteria
// were satisfied for it (RCS), and Decide says whether the error is claimed
// or unclaimed. The claim travels to the caller in an application header,
// encoded and parsed here.
//
// Nothing in this package does I/O, reads a clock or keeps global state, so
// every rule is covered by table tests.
package ownership
