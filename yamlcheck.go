package errown

import (
	"cmp"
	"encoding"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/errown/errown/internal/configkey"
	"go.uber.org/multierr"
)

var (
	_durationType        = reflect.TypeOf(time.Duration(0))
	_textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkYAML walks a generically decoded YAML value against the type it is
// meant for and reports, by key path, every unknown key, every value of
// the wrong type, every value a text type's own parser refuses, and every
// key written with a zero where def, the default at v's place
// (yamlDefaults), holds something else (see Config), so that errors name
// the key rather than a line of YAML, and all of them at once. An invalid
// def checks no zero.
func checkYAML(path string, v interface{}, t reflect.Type, def reflect.Value) error {
	if v == nil {
		return nil // null: the zero value, whatever the type
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if def.IsValid() {
			def = def.Elem()
		}
	}
	if t == _durationType {
		switch d := v.(type) {
		case int:
			if d == 0 {
				return nil // a bare 0 is no duration at all, unambiguously
			}
			// A bare number would be nanoseconds: "attemptTimeout: 500"
			// is almost surely not meant as 500ns.
		case string:
			if _, err := time.ParseDuration(d); err == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: want a duration such as 10s, got %s", path, describe(v))
	}
	if reflect.PointerTo(t).Implements(_textUnmarshalerType) {
		// A type that reads itself from text (an edge kind) is written as
		// a YAML string, and its own parser says what a bad one is. yaml
		// would stop at the first bad value, with no key.
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a string, got %s", path, describe(v))
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[interface{}]interface{})
		if !ok {
			return fmt.Errorf("%s: want a mapping, got %s", orRoot(path), describe(v))
		}
		return eachKey(m, t, func(k string, f reflect.StructField, known bool, value interface{}) error {
			if !known {
				return unknownKey(join(path, k), k, yamlFields(t))
			}
			var fdef reflect.Value
			if def.IsValid() {
				fdef = def.FieldByIndex(f.Index)
			}
			if fdef.IsValid() && (!fdef.IsZero() || f.Tag.Get("zeromeans") != "") && isZero(value, f.Type) && lookup(m, f.Tag.Get("zerounless")) != true {
				return zeroError(join(path, k), value, f, fdef)
			}
			return checkYAML(join(path, k), value, f.Type, fdef)
		})
	case reflect.Slice:
		s, ok := v.([]interface{})
		if !ok {
			return fmt.Errorf("%s: want a list, got %s", path, describe(v))
		}
		var edef reflect.Value // a list's items' defaults: its first's
		if def.IsValid() && def.Len() > 0 {
			edef = def.Index(0)
		}
		var err error
		for i, e := range s {
			err = multierr.Append(err, checkYAML(fmt.Sprintf("%s[%d]", path, i), e, t.Elem(), edef))
		}
		return err
	case reflect.String:
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: want a string, got %s", path, describe(v))
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want true or false, got %s", path, describe(v))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		switch v.(type) {
		case int, int64, uint64:
		default:
			return fmt.Errorf("%s: want an integer, got %s", path, describe(v))
		}
	case reflect.Float64, reflect.Float32:
		switch v.(type) {
		case int, int64, uint64, float64:
		default:
			return fmt.Errorf("%s: want a number, got %s", path, describe(v))
		}
	}
	return nil
}

// eachKey calls f for each key of m, a YAML mapping read into struct
// type t, in key order: with the key's field and known true when t has
// one, and the key's value. It returns f's errors together.
func eachKey(m map[interface{}]interface{}, t reflect.Type, f func(key string, field reflect.StructField, known bool, value interface{}) error) error {
	fields := yamlFields(t)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, fmt.Sprint(k))
	}
	sort.Strings(keys)
	var err error
	for _, k := range keys {
		field, known := fields[k]
		err = multierr.Append(err, f(k, field, known, lookup(m, k)))
	}
	return err
}

// unknownKey is the error of a key the struct has no field for, naming
// the key it was likely meant to be.
func unknownKey(path, key string, fields map[string]reflect.StructField) error {
	known := make([]string, 0, len(fields))
	for k := range fields {
		known = append(known, k)
	}
	if near := configkey.Closest(key, known); near != "" {
		return fmt.Errorf("%s: unknown key, did you mean %s?", path, near)
	}
	return fmt.Errorf("%s: unknown key", path)
}

// yamlFields maps the YAML key of each field of struct type t, inline
// structs' fields included, to the field, its Index the path from t.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") || (f.Anonymous && tag == "") {
			for k, v := range yamlFields(f.Type) {
				v.Index = append([]int{i}, v.Index...)
				out[k] = v
			}
			continue
		}
		name = cmp.Or(name, strings.ToLower(f.Name))
		out[name] = f
	}
	return out
}

func lookup(m map[interface{}]interface{}, key string) interface{} {
	for k, v := range m {
		if fmt.Sprint(k) == key {
			return v
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return _configKey
	}
	return path
}

// describe names a decoded YAML value and its kind for an error message,
// cut short when long.
func describe(v interface{}) string {
	var kind string
	switch v.(type) {
	case string:
		kind = "string"
	case int, int64, uint64:
		kind = "integer"
	case float64:
		kind = "number"
	case bool:
		kind = "boolean"
	case []interface{}:
		return "a list"
	case map[interface{}]interface{}:
		return "a mapping"
	default:
		kind = fmt.Sprintf("%T", v)
	}
	s := fmt.Sprintf("%q", fmt.Sprint(v))
	if len(s) > 40 {
		s = s[:37] + `..."`
	}
	return kind + " " + s
}
