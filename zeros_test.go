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

// _zeroLiteral are the fields whose zero means what it says, or is
// refused as a missing required value: an explicit zero is taken as
// written. With _zeroRules they cover every field of Config.
var _zeroLiteral = map[string]struct {
	why      string
	accepted bool // false: the zero is refused as a missing required value
}{
	"retry.budget.noFloor":            {"false is the default", true},
	"retry.budget.disabled":           {"false is the default", true},
	"retry.overload.disabled":         {"false is the default", true},
	"refuseRepeats":                   {"false is the default", true},
	"retry.policies[].service":        {"required", false},
	"retry.policies[].procedure":      {`"" is how a policy covers every procedure`, true},
	"retry.policies[].mode":           {`"" is how a policy takes the top-level mode`, true},
	"retry.policies[].attemptTimeout": {"0 is no per-attempt limit", true},
	"retry.policies[].idempotent":     {"false is never replayed", true},
	"dependencies[].callerProcedure":  {`"" is any, as "*"`, true},
	"dependencies[].service":          {"required", false},
	"dependencies[].procedure":        {`"" is any, as "*"`, true},
	"dependencies[].kind":             {"required", false},
	"dependencies[].recorded":         {"false is the default", true},
	"memory.disabled":                 {"false is the default", true},
	"memory.noHysteresis":             {"false is the default", true},
	"memory.snapshot.path":            {`"" is no snapshot`, true},
	"memory.fleet.url":                {`"" is no fleet source`, true},
	"memory.fleet.selector":           {`"" is no selector`, true},
	"edge.transports":                 {"[] is no edge transport", true},
	"edge.procedures":                 {"[] is no edge procedure", true},
	"edge.callers":                    {"[] is no edge caller", true},
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

// TestZeroRulesCoverConfig: every field of Config has said what its zero
// means. A field added without a word here fails this test.
func TestZeroRulesCoverConfig(t *testing.T) {
	for _, path := range leafPaths("", reflect.TypeFor[Config]()) {
		_, ruled := _zeroRules[path]
		_, literal := _zeroLiteral[path]
		assert.True(t, ruled != literal, "%s: in _zeroRules %v, in _zeroLiteral %v: want exactly one", path, ruled, literal)
	}
	all := map[string]bool{}
	for _, p := range leafPaths("", reflect.TypeFor[Config]()) {
		all[p] = true
	}
	for p := range _zeroRules {
		assert.True(t, all[p], "_zeroRules: %s is no field of Config", p)
	}
	for p := range _zeroLiteral {
		assert.True(t, all[p], "_zeroLiteral: %s is no field of Config", p)
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
	for path, rule := range _zeroRules {
		t.Run(path, func(t *testing.T) {
			give := withZero(t, path, zeroOf(t, path))
			_, err := ConfigFromYAML([]byte(give))
			require.Error(t, err, give)
			want := strings.ReplaceAll(path, "[]", "[0]") + ": "
			assert.ErrorContains(t, err, want)
			assert.ErrorContains(t, err, " would mean "+rule.means+"; ")

			without := withZero(t, path, nil) // the key given no value: left out
			_, err = ConfigFromYAML([]byte(without))
			assert.NoError(t, err, without)
		})
	}
}

// TestExplicitZeroTakenAsWritten: a field whose zero means what it says
// takes the zero written out; a required one still refuses it.
func TestExplicitZeroTakenAsWritten(t *testing.T) {
	for path, lit := range _zeroLiteral {
		t.Run(path, func(t *testing.T) {
			give := withZero(t, path, zeroOf(t, path))
			_, err := ConfigFromYAML([]byte(give))
			if lit.accepted {
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
		{"memory:\n  hysteresis: 0\n  noHysteresis: true\n", Config{Memory: depmem.Config{NoHysteresis: true}}},
		{"retry:\n  policies:\n    - {service: users, idempotent: true, attemptTimeout: 0s}\n", Config{Retry: RetryConfig{Policies: []retry.PolicyConfig{{Service: "users", Idempotent: new(true)}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, err := ConfigFromYAML([]byte(tt.give))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
