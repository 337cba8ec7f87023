package errown

import (
	"cmp"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// A key written in YAML with the zero of its type where the default is
// not zero is an error (see Config); a key given no value ("ratio:") is a
// key left out. What a zero would mean is read from the defaults
// themselves (yamlDefaults); a field's tags add the rest:
//
//	zerofix    how to write what an explicit zero asks for ("to disable
//	           the floor write noFloor: true"); by default, write the
//	           value meant, or leave the key out
//	zerounless a sibling key that, set to true, makes the zero mean what
//	           it says: "minPerSecond: 0" beside "noFloor: true"
//	zeromeans  what the zero means, where the default is not one value
//	           ("the default query", which depends on the window)

// yamlDefaults is the Config errown runs with when given nothing, with one
// item in each list of structs, which holds a list item's defaults: the
// value checkYAML compares each key written with a zero to.
func yamlDefaults() reflect.Value {
	var c Config
	withItems(reflect.ValueOf(&c).Elem())
	return reflect.ValueOf(c.withDefaults())
}

// withItems puts one zero item in every list of structs v holds.
func withItems(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				withItems(f)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Struct {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			withItems(v.Index(0))
		}
	}
}

// zeroError is the error of field f, whose default is def, written at
// path as the zero written.
func zeroError(path string, written interface{}, f reflect.StructField, def reflect.Value) error {
	means := cmp.Or(f.Tag.Get("zeromeans"), "the default "+showDefault(def))
	fix := cmp.Or(f.Tag.Get("zerofix"), "write the value you mean, or leave the key out for the default")
	return fmt.Errorf("%s: %s would mean %s; %s", path, showZero(written), means, fix)
}

// showDefault writes a default as YAML does: 10m, "errown-claim",
// [unknown, internal].
func showDefault(v reflect.Value) string {
	switch {
	case v.Type() == _durationType:
		return shortDuration(time.Duration(v.Int()))
	case v.Kind() == reflect.String:
		return strconv.Quote(v.String())
	case v.Kind() == reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return "[" + strings.Join(items, ", ") + "]"
	default:
		return fmt.Sprint(v.Interface())
	}
}

// isZero reports whether v, decoded from YAML, is the zero of type t. A
// YAML null is not: it is a key given no value, read as left out.
func isZero(v interface{}, t reflect.Type) bool {
	if v == nil {
		return false
	}
	if t == _durationType {
		if s, ok := v.(string); ok {
			d, err := time.ParseDuration(s)
			return err == nil && d == 0
		}
		return v == 0
	}
	switch t.Kind() {
	case reflect.String:
		return v == ""
	case reflect.Slice:
		s, ok := v.([]interface{})
		return ok && len(s) == 0
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64, reflect.Float32:
		switch n := v.(type) {
		case int:
			return n == 0
		case int64:
			return n == 0
		case uint64:
			return n == 0
		case float64:
			return n == 0 // -0 too
		}
	}
	return false
}

// showZero is how a zero was written, for an error message.
func showZero(v interface{}) string {
	switch z := v.(type) {
	case string:
		if z == "" {
			return `""`
		}
		return z // a duration such as 0s
	case []interface{}:
		return "[]"
	default:
		return fmt.Sprint(v)
	}
}

// shortDuration writes d as a person does: 10m rather than 10m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
