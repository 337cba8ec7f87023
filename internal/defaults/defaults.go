// Package defaults holds the wire names of errown's application headers
// and of the dependency memory's edge labels,
// which errown's packages and tests share, and Fill, which the public
// configuration packages use to give a field left zero its default. Each
// of those packages writes its defaults once, in its DefaultConfig (or
// ownership.DefaultHeaders); Fill reads them from there.
package defaults

import "reflect"

// Application header names (ownership.DefaultHeaders). yarpc lowercases
// header names, so these are lower case too.
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
	// RootHeader carries the root key on requests: the root request a
	// request is part of, for admission by root.
	RootHeader = "errown-root"
	// ShedHeader marks an error response as a shed by the callee
	// instance's admission, its value the reason.
	ShedHeader = "errown-shed"
)

// Labels of an edge: the tags of the dependency memory's per-edge
// counters, and the labels its fleet queries must return on each series
// (depmem.FleetConfig).
const (
	LabelCallerProcedure = "caller_procedure"
	LabelCalleeService   = "callee_service"
	LabelCalleeProcedure = "callee_procedure"
)

// Fill returns v with each field left zero (a list: empty) set to def's,
// struct fields field by field: the zero-means-default rule of errown's
// configuration structs, with def their DefaultConfig. A field whose zero
// means the default only unless a switch says otherwise (noFloor) is the
// caller's to put back.
func Fill[T any](v, def T) T {
	out := reflect.ValueOf(&v).Elem()
	fill(out, reflect.ValueOf(def))
	return v
}

func fill(v, def reflect.Value) {
	if v.Kind() == reflect.Struct {
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fill(f, def.Field(i))
			}
		}
		return
	}
	if v.IsZero() || (v.Kind() == reflect.Slice && v.Len() == 0) {
		v.Set(def)
	}
}
