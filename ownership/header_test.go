package ownership

import (
	"testing"

	"github.com/errown/errown/internal/defaults"
	"github.com/stretchr/testify/assert"
	"go.uber.org/multierr"
	"gopkg.in/yaml.v2"
)

func TestHeadersWithDefaults(t *testing.T) {
	tests := []struct {
		give Headers
		want Headers
	}{
		{
			give: Headers{},
			want: Headers{Claim: defaults.ClaimHeader, Attempt: defaults.AttemptHeader, NoRetry: defaults.NoRetryHeader, Code: defaults.CodeHeader, Storm: defaults.StormHeader, Root: defaults.RootHeader, Shed: defaults.ShedHeader},
		},
		{
			give: Headers{Claim: "x-claim", Storm: "x-storm"},
			want: Headers{Claim: "x-claim", Attempt: defaults.AttemptHeader, NoRetry: defaults.NoRetryHeader, Code: defaults.CodeHeader, Storm: "x-storm", Root: defaults.RootHeader, Shed: defaults.ShedHeader},
		},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.give.withDefaults(), "%+v", tt.give)
	}
}

func TestHeadersValidate(t *testing.T) {
	tests := []struct {
		name string
		give Headers
		want []string
	}{
		{name: "defaults", give: Headers{}},
		{name: "renamed", give: Headers{Claim: "x-claim", Attempt: "x-attempt", NoRetry: "x-no-retry", Code: "x-code", Storm: "x-storm", Root: "x-root", Shed: "x-shed"}},
		{
			name: "bad names, each by its key",
			give: Headers{Claim: "X-Claim", Attempt: "rpc-attempt", NoRetry: "x no", Code: "grpc-code", Storm: "x_storm", Root: "rpc-root", Shed: "Shed"},
			want: []string{
				`claimHeader: must be lower-case letters, digits and '-', got "X-Claim"`,
				`attemptHeader: "rpc-attempt" starts with "rpc-", which yarpc reserves`,
				`noRetryHeader: must be lower-case letters, digits and '-', got "x no"`,
				`codeHeader: "grpc-code" starts with "grpc-", which yarpc reserves`,
				`stormHeader: must be lower-case letters, digits and '-', got "x_storm"`,
				`rootHeader: "rpc-root" starts with "rpc-", which yarpc reserves`,
				`shedHeader: must be lower-case letters, digits and '-', got "Shed"`,
			},
		},
		{
			name: "a name set to another's default",
			give: Headers{Storm: defaults.ClaimHeader},
			want: []string{`stormHeader: "errown-claim" is already used by claimHeader`},
		},
		{
			name: "three headers with one name",
			give: Headers{Attempt: "same", NoRetry: "same", Code: "same"},
			want: []string{
				`noRetryHeader: "same" is already used by attemptHeader`,
				`codeHeader: "same" is already used by noRetryHeader`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range multierr.Errors(tt.give.Validate()) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestHeadersYAML: the keys are those of every Config that embeds Headers
// inline.
func TestHeadersYAML(t *testing.T) {
	var got struct {
		Headers `yaml:",inline"`
		Other   string `yaml:"other"`
	}
	give := "claimHeader: a\nattemptHeader: b\nnoRetryHeader: c\ncodeHeader: d\nstormHeader: e\nother: f\n"
	assert.NoError(t, yaml.UnmarshalStrict([]byte(give), &got))
	assert.Equal(t, Headers{Claim: "a", Attempt: "b", NoRetry: "c", Code: "d", Storm: "e"}, got.Headers)
	assert.Equal(t, "f", got.Other)
}
