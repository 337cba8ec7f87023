// Package depmem is errown's dependency memory: it tells, per edge, whether
// a callee is a hard (fail-close) or soft (fail-open) dependency of the
// caller procedure that called it.
//
// In DESIGN.md's data flow the inbound middleware asks the memory for the
// kind of each failed outbound call's edge before it decides whether the
// request's error is claimed. A failure on a fail-open edge is
// coincidental and never unclaims; what an unknown edge does is the
// inbound side's choice (by default it counts as correlated).
//
// Static declarations from configuration come first. Learning from traffic
// builds on this interface.
package depmem
