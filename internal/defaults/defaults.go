// Package defaults holds the wire names of errown's application headers
// and of the dependency memory's edge labels, and Fill, the one place a
// configuration field left zero is given its default, read from the
// DefaultConfig of the field's package.
package defaults

import (
	"reflect"
	"strings"
)

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
// configuration structs, with def their DefaultConfig. A field tagged
// zerounless:"key" keeps its zero (and any value) while its sibling of
// YAML key key is true (minPerSecond beside noFloor: true). Each item of
// a list of structs is filled from the one of items that has its type
// (a retry policy from DefaultPolicyConfig); the list is copied first,
// never changed in place.
func Fill[T any](v, def T, items ...any) T {
	fill(reflect.ValueOf(&v).Elem(), reflect.ValueOf(def), itemDefaults(items), false)
	return v
}

// Section is Fill for a section of errown.Config, which leaves alone the
// section's fields that YAML does not read there (yaml:"-"): its header
// names and mode are the root's, and errown gives them to the section
// where it builds the section's middleware.
func Section[T any](v, def T, items ...any) T {
	fill(reflect.ValueOf(&v).Elem(), reflect.ValueOf(def), itemDefaults(items), true)
	return v
}

func itemDefaults(items []any) map[reflect.Type]reflect.Value {
	out := make(map[reflect.Type]reflect.Value, len(items))
	for _, it := range items {
		out[reflect.TypeOf(it)] = reflect.ValueOf(it)
	}
	return out
}

func fill(v, def reflect.Value, items map[reflect.Type]reflect.Value, section bool) {
	switch {
	case v.Kind() == reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			f := v.Field(i)
			tf := t.Field(i)
			if !f.CanSet() || (section && tf.Tag.Get("yaml") == "-") || keepsZero(v, tf) {
				continue
			}
			fill(f, def.Field(i), items, false)
		}
	case v.Kind() == reflect.Slice && v.Len() > 0:
		item, ok := items[v.Type().Elem()]
		if !ok {
			return
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(out, v)
		for i := range out.Len() {
			fill(out.Index(i), item, items, false)
		}
		v.Set(out)
	case v.IsZero() || (v.Kind() == reflect.Slice && v.Len() == 0):
		v.Set(def)
	}
}

// keepsZero reports whether field f of struct v is tagged zerounless with
// the YAML key of a sibling that is true.
func keepsZero(v reflect.Value, f reflect.StructField) bool {
	key := f.Tag.Get("zerounless")
	if key == "" {
		return false
	}
	t := v.Type()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name == key {
			return v.Field(i).Kind() == reflect.Bool && v.Field(i).Bool()
		}
	}
	return false
}
