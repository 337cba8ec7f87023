// Package defaults holds the values errown's configuration takes where a
// field is left zero, and the functions that apply them. Each public
// configuration package's Config field doc states its default in words;
// the values live here, one place each, for the package itself, errown's
// YAML checks (zeros.go) and errown's tests.
//
// It imports nothing of errown's, so every public configuration package
// can import it. A public package registers, at init, the function that
// applies its defaults to its configuration type (Register); errown's
// internal consumers apply them with Apply.
package defaults

import (
	"fmt"
	"time"
)

// Application header names (ownership.Headers). yarpc lowercases header
// names, so these are lower case too.
const (
	// ClaimHeader carries a claim on error responses.
	ClaimHeader = "errown-claim"
	// AttemptHeader carries the attempt number on requests.
	AttemptHeader = "errown-attempt"
	// NoRetryHeader on an error response asks the caller not to retry.
	NoRetryHeader = "errown-no-retry"
	// CodeHeader carries the code of an application error (a Thrift
	// exception's rpc.code) on its response, for transports that drop it
	// (gRPC).
	CodeHeader = "errown-code"
	// StormHeader carries storm telemetry up the call graph on responses.
	StormHeader = "errown-storm"
)

// inbound.Config and ingresslog.Config.
const (
	// MaxRootProcedures bounds the root procedures that get their own
	// storm metric series; the others share the procedure tag "_other".
	MaxRootProcedures = 100
	// IngressShards is the shard count of the in-flight map.
	IngressShards = 64
	// IngressMaxInFlight bounds the requests tracked in flight.
	IngressMaxInFlight = 100000
)

// outbound.Config.
const (
	// IncidentWindow is how long after an incident a caller procedure's
	// calls stay marked.
	IncidentWindow = 10 * time.Second
)

// retry.Config, retry.BudgetConfig, retry.OverloadConfig and
// retry.PolicyConfig.
const (
	// MaxBodyBytes is the largest request body buffered for replay.
	MaxBodyBytes = 1 << 20
	// BudgetRatio is the retries allowed per original request.
	BudgetRatio = 0.1
	// BudgetMinPerSecond is the retries allowed per second whatever the
	// ratio, unless the budget has no floor.
	BudgetMinPerSecond = 10.0
	// BudgetWindow is the window the budget counts over.
	BudgetWindow = 10 * time.Second
	// MaxAttempts is the attempts a policy allows, the first one included.
	MaxAttempts = 2
	// InitialBackoff is the backoff ceiling before the first retry.
	InitialBackoff = 10 * time.Millisecond
	// MaxBackoff caps the backoff ceiling.
	MaxBackoff = time.Second
	// MinRemaining is the least deadline left (beyond the backoff) to
	// start a retry.
	MinRemaining = 5 * time.Millisecond
	// OverloadMaxInFlight is the ceiling of a callee's limit on attempts
	// in flight, and where it starts: far above what a healthy callee
	// needs, so that the limit only matters once it was cut.
	OverloadMaxInFlight = 1000
	// OverloadMinInFlight is the floor of the limit.
	OverloadMinInFlight = 1
	// OverloadThreshold is the share of a callee's recent attempts that
	// ended overloaded at which the limit holds, is cut, and retries of
	// overloaded attempts stop: most of them, so that the tail timeouts
	// of a healthy callee never reach it.
	OverloadThreshold = 0.5
)

// inbound.AdmissionConfig.
const (
	AdmissionMaxQueue = 32
	AdmissionMinLimit = 2
	AdmissionMaxLimit = 1000
)

// depmem.Config.
const (
	MemoryWindow   = 10 * time.Minute
	MemoryBuckets  = 10
	MinSamples     = 20
	CloseThreshold = 0.8
	OpenThreshold  = 0.2
	Hysteresis     = 0.05
	MaxEdges       = 1000
	// SnapshotInterval is the time between snapshots.
	SnapshotInterval = time.Minute
	// FleetInterval is the time between fleet queries.
	FleetInterval = 30 * time.Second
	// FleetTimeout bounds one fleet query.
	FleetTimeout = 5 * time.Second
)

// appliers holds, by the nil *T of each registered type T, its
// func(T) T. Written only by the inits of the packages that register,
// which run before any of their importers' code, it is read without a
// lock.
var appliers = make(map[any]any)

// Register makes apply the function Apply uses for a T. The package that
// declares T calls it from its init, once.
func Register[T any](apply func(T) T) {
	key := any((*T)(nil))
	if _, dup := appliers[key]; dup {
		panic(fmt.Sprintf("defaults: %T registered twice", key))
	}
	appliers[key] = apply
}

// Apply returns cfg with every zero field set to its default: the
// configuration errown runs with. It panics for a type no package
// registered.
func Apply[T any](cfg T) T {
	apply, ok := appliers[any((*T)(nil))]
	if !ok {
		panic(fmt.Sprintf("defaults: no defaults registered for %T", cfg))
	}
	return apply.(func(T) T)(cfg)
}
