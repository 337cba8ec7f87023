package errown

import (
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v2"
)

// _required are the fields whose zero is refused as a missing required
// value, not as a default.
var _required = map[string]bool{
	"retry.policies[].service": true,
	"dependencies[].service":   true,
	"dependencies[].kind":      true,
}

// defaultAt is the default at path in yamlDefaults, "[]" standing for a
// list's first item, and the field that holds it.
func defaultAt(t *testing.T, path string) (reflect.Value, reflect.StructField) {
	t.Helper()
	v := yamlDefaults()
	var f reflect.StructField
	for _, part := range strings.Split(path, ".") {
		name, isList := strings.CutSuffix(part, "[]")
		var ok bool
		f, ok = yamlFields(v.Type())[name]
		require.True(t, ok, "%s: no key %s", path, name)
		v = v.FieldByIndex(f.Index)
		for v.Kind() == reflect.Pointer {
			v = reflect.Zero(v.Type().Elem())
		}
		if isList {
			v = v.Index(0)
		}
	}
	return v, f
}

// meansDefault lists the key paths of every field whose zero means a
// default (DefaultConfig holds something else there), and the others.
func meansDefault(t *testing.T) (defaulted, literal []string) {
	for _, path := range leafPaths("", reflect.TypeFor[Config]()) {
		if v, f := defaultAt(t, path); !v.IsZero() || f.Tag.Get("zeromeans") != "" {
			defaulted = append(defaulted, path)
		} else {
			literal = append(literal, path)
		}
	}
	return defaulted, literal
}

// leafPaths lists the key paths of every field of t that holds a value
// rather than more keys, "[]" standing for a list index.
func leafPaths(prefix string, t reflect.Type) []string {
	var out []string
	for k, f := range yamlFields(t) {
		path := join(prefix, k)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, leafPaths(path, ft)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, leafPaths(path+"[]", ft.Elem())...)
		default:
			out = append(out, path)
		}
	}
	sort.Strings(out)
	return out
}

// TestZeroTags: a field's zerounless names a sibling key, and its zero
// tags are on a field whose zero means a default.
func TestZeroTags(t *testing.T) {
	defaulted, literal := meansDefault(t)
	assert.Contains(t, defaulted, "retry.budget.minPerSecond")
	assert.Contains(t, literal, "retry.policies[].attemptTimeout")
	for _, path := range literal {
		_, f := defaultAt(t, path)
		assert.Empty(t, f.Tag.Get("zerofix")+f.Tag.Get("zerounless"), "%s: zero tags on a field whose zero is literal", path)
	}
	for _, path := range defaulted {
		_, f := defaultAt(t, path)
		unless := f.Tag.Get("zerounless")
		if unless == "" {
			continue
		}
		parent := ""
		if i := strings.LastIndex(path, "."); i >= 0 {
			parent = path[:i]
		}
		sib, sf := defaultAt(t, join(parent, unless))
		assert.Equal(t, reflect.Bool, sib.Kind(), "%s: zerounless %s is no switch (%v)", path, unless, sf.Type)
	}
}

// withZero is a YAML errown section holding the zero of the field at path
// (written as zero), and whatever a list item needs beside it.
func withZero(t *testing.T, path string, zero interface{}) string {
	t.Helper()
	items := map[string]map[string]interface{}{
		"retry.policies": {"service": "users", "idempotent": true},
		"dependencies":   {"service": "cache", "kind": "fail-open"},
	}
	root := map[string]interface{}{}
	node, seen := root, ""
	parts := strings.Split(path, ".")
	for i, part := range parts {
		name, isList := strings.CutSuffix(part, "[]")
		seen = join(seen, name)
		last := i == len(parts)-1
		switch {
		case last:
			node[name] = zero
		case isList:
			item := map[string]interface{}{}
			for k, v := range items[seen] {
				item[k] = v
			}
			node[name] = []interface{}{item}
			node = item
		default:
			next := map[string]interface{}{}
			node[name] = next
			node = next
		}
	}
	b, err := yaml.Marshal(root)
	require.NoError(t, err)
	return string(b)
}

// zeroOf is the zero of the field at path, as YAML writes it.
func zeroOf(t *testing.T, path string) interface{} {
	t.Helper()
	ty := reflect.TypeFor[Config]()
	for _, part := range strings.Split(path, ".") {
		name, isList := strings.CutSuffix(part, "[]")
		f, ok := yamlFields(ty)[name]
		require.True(t, ok, "%s: no key %s", path, name)
		ty = f.Type
		for ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		if isList {
			ty = ty.Elem()
		}
	}
	switch {
	case ty == _durationType:
		return "0s"
	case ty.Kind() == reflect.String:
		return ""
	case ty.Kind() == reflect.Slice:
		return []interface{}{}
	case ty.Kind() == reflect.Bool:
		return false
	case ty.Kind() == reflect.Float64:
		return 0.0
	default:
		return 0
	}
}

// TestExplicitZeroMeaningADefaultIsRefused: for every field whose zero
// means a default, the zero written out fails with what it would mean,
// and the same section without the key is fine.
func TestExplicitZeroMeaningADefaultIsRefused(t *testing.T) {
	defaulted, _ := meansDefault(t)
	for _, path := range defaulted {
		t.Run(path, func(t *testing.T) {
			give := withZero(t, path, zeroOf(t, path))
			_, err := ConfigFromYAML([]byte(give))
			require.Error(t, err, give)
			want := strings.ReplaceAll(path, "[]", "[0]") + ": "
			assert.ErrorContains(t, err, want)
			assert.ErrorContains(t, err, " would mean the default ")

			without := withZero(t, path, nil) // the key given no value: left out
			_, err = ConfigFromYAML([]byte(without))
			assert.NoError(t, err, without)
		})
	}
}

// TestExplicitZeroTakenAsWritten: a field whose zero means what it says
// takes the zero written out; a required one still refuses it.
func TestExplicitZeroTakenAsWritten(t *testing.T) {
	_, literal := meansDefault(t)
	for _, path := range literal {
		t.Run(path, func(t *testing.T) {
			give := withZero(t, path, zeroOf(t, path))
			_, err := ConfigFromYAML([]byte(give))
			if !_required[path] {
				assert.NoError(t, err, give)
			} else {
				assert.Error(t, err, give)
				assert.NotContains(t, err.Error(), "would mean")
			}
		})
	}
}

func TestExplicitZeroMessages(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{
			give: "retry:\n  budget:\n    minPerSecond: 0\n",
			want: []string{"errown: config: retry.budget.minPerSecond: 0 would mean the default 10; to disable the floor write noFloor: true"},
		},
		{
			give: "retry:\n  budget:\n    ratio: 0.0\n",
			want: []string{"retry.budget.ratio: 0 would mean the default 0.1; for a budget that is nearly all floor write a tiny ratio such as 0.0001"},
		},
		{
			give: "retry:\n  policies:\n    - {service: users, idempotent: true}\n    - {service: orders, idempotent: true, maxAttempts: 0, retryableCodes: [], initialBackoff: 0ms}\n",
			want: []string{
				"retry.policies[1].initialBackoff: 0ms would mean the default 10ms; for practically no backoff write 1ns",
				"retry.policies[1].maxAttempts: 0 would mean the default 2; for no retries write maxAttempts: 1",
				"retry.policies[1].retryableCodes: [] would mean the default [unknown, deadline-exceeded, internal, unavailable]; for no retries write maxAttempts: 1",
			},
		},
		{
			give: "claimHeader: \"\"\nmemory:\n  window: 0\n  hysteresis: 0\n",
			want: []string{
				`claimHeader: "" would mean the default "errown-claim"; write the value you mean, or leave the key out for the default`,
				"memory.hysteresis: 0 would mean the default 0.05; for none write noHysteresis: true",
				"memory.window: 0 would mean the default 10m; write the value you mean",
			},
		},
		{
			// A value of the wrong type is reported as such, once.
			give: "ingress:\n  shards: zero\n",
			want: []string{`ingress.shards: want an integer, got string "zero"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := ConfigFromYAML([]byte(tt.give))
			require.Error(t, err)
			for _, want := range tt.want {
				assert.ErrorContains(t, err, want)
			}
			assert.Equal(t, len(tt.want), len(errorStrings(errors.Unwrap(err))), err.Error())
		})
	}
}

// TestExplicitZeroWithItsSwitch: the zero beside the switch that says it
// means none is taken as written.
func TestExplicitZeroWithItsSwitch(t *testing.T) {
	tests := []struct {
		give string
		want Config
	}{
		{"retry:\n  budget:\n    minPerSecond: 0\n    noFloor: true\n", Config{Retry: RetryConfig{Budget: retry.BudgetConfig{NoFloor: true}}}},
		{"retry:\n  budget:\n    noFloor: true\n", Config{Retry: RetryConfig{Budget: retry.BudgetConfig{NoFloor: true}}}},
		{"memory:\n  hysteresis: 0\n  noHysteresis: true\n", Config{Memory: depmem.Config{NoHysteresis: true}}},
		{"retry:\n  policies:\n    - {service: users, idempotent: true, attemptTimeout: 0s}\n", Config{Retry: RetryConfig{Policies: []retry.PolicyConfig{{Service: "users", Idempotent: new(true)}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := ConfigFromYAML([]byte(tt.give))
			require.NoError(t, err)
			assert.Equal(t, tt.want.withDefaults(), got)
		})
	}
}
