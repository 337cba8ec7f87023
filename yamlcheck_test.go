package errown

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v2"
)

// level is a text type for checkYAML's tests, as ownership.EdgeKind is
// one: it reads "low" and "high".
type level int

func (l *level) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*l = 1
	case "high":
		*l = 2
	default:
		return fmt.Errorf("unknown level %q", b)
	}
	return nil
}

type levels struct {
	Level  level    `yaml:"level,omitempty"`
	Ptr    *level   `yaml:"ptr,omitempty"`
	Levels []level  `yaml:"levels,omitempty"`
	Nested []levels `yaml:"nested,omitempty"`
}

func checkLevels(t *testing.T, give string) error {
	var raw interface{}
	require.NoError(t, yaml.Unmarshal([]byte(give), &raw))
	return checkYAML("", raw, reflect.TypeFor[levels](), reflect.Value{})
}

// TestCheckYAMLTextAccepts: what checkYAML lets through, yaml decodes.
func TestCheckYAMLTextAccepts(t *testing.T) {
	high := level(2)
	tests := []struct {
		give string
		want levels
	}{
		{"level: low", levels{Level: 1}},
		{`level: "high"`, levels{Level: 2}},
		{"ptr: high", levels{Ptr: &high}},
		{"ptr: ~", levels{}},
		{"level:", levels{}},
		{"levels: [low, high]", levels{Levels: []level{1, 2}}},
		{"nested: [{level: high}]", levels{Nested: []levels{{Level: 2}}}},
		{"level: !!str low", levels{Level: 1}},
		{"level: !!binary aGlnaA==", levels{Level: 2}}, // "high"
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			require.NoError(t, checkLevels(t, tt.give))
			var got levels
			require.NoError(t, yaml.UnmarshalStrict([]byte(tt.give), &got))
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestCheckYAMLTextRejects: a text type wants a YAML string its own parser
// reads; every value that is not is reported under its key.
func TestCheckYAMLTextRejects(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"level: medium", []string{`level: unknown level "medium"`}},
		{"level: ''", []string{`level: unknown level ""`}},
		{"ptr: [low]", []string{"ptr: want a string, got a list"}},
		{"ptr: {low: 1}", []string{"ptr: want a string, got a mapping"}},
		{"level: 1", []string{`level: want a string, got integer "1"`}},
		{"level: 1.5", []string{`level: want a string, got number "1.5"`}},
		{"level: true", []string{`level: want a string, got boolean "true"`}},
		{"levels: [low, medium, high, 3, top]", []string{
			`levels[1]: unknown level "medium"`,
			`levels[3]: want a string, got integer "3"`,
			`levels[4]: unknown level "top"`,
		}},
		{"nested: [{level: high}, {level: mid, ptr: low}, {ptr: max}]", []string{
			`nested[1].level: unknown level "mid"`,
			`nested[2].ptr: unknown level "max"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			assert.Equal(t, tt.want, errorStrings(checkLevels(t, tt.give)))
		})
	}
}

// TestCheckYAMLEdgeKind: ownership.EdgeKind is a text type, read by its
// own parser.
func TestCheckYAMLEdgeKind(t *testing.T) {
	kind := reflect.TypeFor[*ownership.EdgeKind]()
	for _, give := range []string{"fail-close", "fail-open", "unknown"} {
		assert.NoError(t, checkYAML("kind", give, kind, reflect.Value{}), give)
	}
	assert.EqualError(t, checkYAML("kind", "soft", kind, reflect.Value{}), `kind: unknown edge kind "soft" (want fail-close, fail-open or unknown)`)
	assert.EqualError(t, checkYAML("kind", 1, kind, reflect.Value{}), `kind: want a string, got integer "1"`)
}

// TestCheckYAMLUnknownKeySuggests: an unknown key close to a known one
// names it.
func TestCheckYAMLUnknownKeySuggests(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"levle: low", []string{"levle: unknown key, did you mean level?"}},
		{"Levels: [low]", []string{"Levels: unknown key, did you mean levels?"}},
		{"nested: [{pointer: low}]", []string{"nested[0].pointer: unknown key"}},
		{"colour: low", []string{"colour: unknown key"}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			assert.Equal(t, tt.want, errorStrings(checkLevels(t, tt.give)))
		})
	}
}

// TestYAMLFieldsInline: a struct embedded with `yaml:",inline"` (the
// header names) gives its keys at the level it is embedded in, as yaml
// reads them, so the checks and the zero rules see claimHeader, not
// headers.claimHeader.
func TestYAMLFieldsInline(t *testing.T) {
	type outer struct {
		ownership.Headers `yaml:",inline"`
		B                 string `yaml:"b,omitempty"`
	}
	keys := func(t reflect.Type) []string {
		var out []string
		for k := range yamlFields(t) {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, []string{"attemptHeader", "b", "claimHeader", "codeHeader", "noRetryHeader", "rootHeader", "shedHeader", "stormHeader"}, keys(reflect.TypeFor[outer]()))
	fields := yamlFields(reflect.TypeFor[Config]())
	for _, k := range keys(reflect.TypeFor[ownership.Headers]()) {
		assert.Contains(t, fields, k)
	}
	assert.NotContains(t, fields, "headers")
	// The sections' header names and mode are the root's: no key of their own.
	for _, typ := range []reflect.Type{reflect.TypeFor[inbound.Config](), reflect.TypeFor[outbound.Config](), reflect.TypeFor[retry.Config]()} {
		fields := yamlFields(typ)
		for _, k := range append(keys(reflect.TypeFor[ownership.Headers]()), "mode", "headers") {
			assert.NotContains(t, fields, k, "%v", typ)
		}
	}
	assert.Equal(t, []int{3, 1}, fields["maxRootProcedures"].Index, "an inline field's index, from Config")

	var raw interface{}
	require.NoError(t, yaml.Unmarshal([]byte("claimHeader: x-claim\nstormHedaer: x\nheaders: {claim: x}"), &raw))
	err := checkYAML("", raw, reflect.TypeFor[Config](), yamlDefaults())
	assert.ErrorContains(t, err, "stormHedaer: unknown key, did you mean stormHeader?")
	assert.ErrorContains(t, err, "headers: unknown key")
	assert.NotContains(t, err.Error(), "claimHeader")
}
