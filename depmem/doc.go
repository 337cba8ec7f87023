// Package depmem configures errown's dependency memory, which tells, per
// edge, whether a callee is a hard (fail-close) or soft (fail-open)
// dependency of the caller procedure that called it: Config, the static
// Declarations, and EdgeView, the operators' view of an edge.
//
// In docs/DESIGN.md's data flow the inbound middleware asks the memory for the
// kind of each failed outbound call's edge before it decides whether the
// request's error is claimed, and afterwards tells the memory
// what happened: a callee failure, and whether the request failed too. A
// failure on a fail-open edge is coincidental and never unclaims; what an
// unknown edge does is the inbound side's choice (by default it counts as
// correlated).
//
// Sources, in order of trust: static declarations from configuration
// (Declaration, errown's Config.Dependencies); the fleet's counts from a Prometheus-compatible API, where they
// hold more callee failures than the local window; the local window.
//
// # Learning
//
// The memory counts, per edge over a sliding window kept in time buckets,
// the callee failures and the joint failures (callee and caller both
// failed). Their ratio estimates P(caller fails | callee fails): at or
// above CloseThreshold the edge is fail-close, at or below OpenThreshold
// fail-open, in between (or with fewer than MinSamples callee failures)
// unknown; Hysteresis keeps an edge near a threshold from flipping. A
// bucket leaves the window whole.
//
// # Bounded state
//
// The memory tracks at most MaxEdges edges at once, evicting those not
// observed for a full Window when a new edge needs a place
// (depmem.edges_evicted); only when none is idle is the new edge's
// observation dropped (depmem.edges_overflow). A full memory with nothing
// idle is scanned at most once per bucket width.
//
// # Fleet
//
// The same counts are emitted as tally counters depmem.callee_failures and
// depmem.joint_failures tagged caller_procedure, callee_service and
// callee_procedure (an empty value is tagged "none"); an evicted edge's
// tagged scope is closed. With Fleet.URL set, the memory queries those
// counters, summed over every instance, on an interval. When the server is
// down or answers garbage the memory carries on from its local window,
// logs the first failure of an outage, and counts every failure in
// depmem.fleet_errors.
//
// # Persistence
//
// With Snapshot.Path set, Start loads the snapshot and the memory writes
// it, as versioned JSON, every Snapshot.Interval and at Stop, atomically.
// A missing file is a first start; a corrupt or foreign one is logged
// once, counted in depmem.snapshot_errors, and ignored.
//
// # Metrics
//
// On the scope errown is given (errown.WithScope), under depmem:
//
//	depmem.callee_failures  tagged by edge: callee failures seen (see Fleet)
//	depmem.joint_failures   tagged by edge: those whose request failed too
//	depmem.edges_evicted    idle edges forgotten to make room
//	depmem.edges_overflow   observations of new edges dropped, nothing idle
//	depmem.fleet_queries    fleet queries made
//	depmem.fleet_errors     fleet queries that failed
//	depmem.snapshot_errors  snapshots that could not be read or written
//	depmem.edges            gauge tagged kind: edges known, declared and learned
//	depmem.fleet_healthy    gauge: 1 after a good fleet query, 0 while failing,
//	                        -1 without a fleet source
//	depmem.series_unclosable
//	                        gauge: 1 when this tally cannot drop an evicted
//	                        edge's series (logged at start)
package depmem
