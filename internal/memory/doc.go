// Package memory is errown's dependency memory (Memory), configured by
// package depmem and built by errown.New: per edge, callee and joint
// failures over a sliding window (Classify turns them into a kind),
// static declarations in front (Static), fleet counts from a
// Prometheus-compatible API, and the snapshot file.
//
// The inbound middleware asks it each failed call's edge kind
// (Classifier) and tells it what happened (Learner); see docs/DESIGN.md.
// Learning, bounds and metrics are documented in package depmem.
package memory
