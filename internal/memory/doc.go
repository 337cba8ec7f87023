// Package memory is errown's dependency memory (Memory), which package
// depmem configures and errown.New builds: per edge, the callee failures
// and joint failures over a sliding window (Classify turns them into a
// kind), the static declarations in front of it (Static), the fleet's
// counts from a Prometheus-compatible API, and the snapshot file.
//
// In docs/DESIGN.md's data flow the inbound middleware asks it the kind
// of each failed call's edge (Classifier) and tells it what happened
// (Learner). How it learns, what it bounds and the metrics it emits are
// in package depmem's documentation.
package memory
