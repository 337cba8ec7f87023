package retry

import (
	"math"
	"testing"
	"time"

	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/multierr"
	"gopkg.in/yaml.v2"
)

func TestConfigWithDefaults(t *testing.T) {
	tests := []struct {
		name string
		give Config
		want Config
	}{
		{
			// Idempotent is required, not defaulted: it stays nil, and
			// Validate reports it.
			name: "zero values take defaults",
			give: Config{Policies: []PolicyConfig{{Service: "s"}}},
			want: Config{
				Headers:      ownership.Headers{Attempt: "errown-attempt", Claim: "errown-claim", NoRetry: "errown-no-retry", Code: "errown-code", Storm: "errown-storm", Root: "errown-root", Shed: "errown-shed"},
				Mode:         ModeEnforce,
				MaxBodyBytes: 1 << 20,
				Budget:       BudgetConfig{Ratio: 0.1, MinPerSecond: 10.0, Window: 10 * time.Second},
				Overload:     DefaultConfig().Overload,
				Policies: []PolicyConfig{{
					Service:        "s",
					MaxAttempts:    2,
					RetryableCodes: []string{"unknown", "deadline-exceeded", "internal", "unavailable"},
					InitialBackoff: 10 * time.Millisecond,
					MaxBackoff:     time.Second,
					MinRemaining:   5 * time.Millisecond,
				}},
			},
		},
		{
			name: "set values kept, no floor among them",
			give: Config{
				Headers:      ownership.Headers{Attempt: "a", Claim: "c", NoRetry: "n"},
				MaxBodyBytes: 7,
				Budget:       BudgetConfig{Ratio: 0.5, NoFloor: true, Window: time.Second, Disabled: true},
				Overload:     DefaultConfig().Overload,
				Policies: []PolicyConfig{{
					Service:        "s",
					Procedure:      "p",
					MaxAttempts:    1,
					RetryableCodes: []string{"aborted"},
					InitialBackoff: time.Millisecond,
					MaxBackoff:     2 * time.Millisecond,
					AttemptTimeout: time.Second,
					MinRemaining:   3 * time.Millisecond,
					Idempotent:     new(false),
				}},
			},
			want: Config{
				Headers:      ownership.Headers{Attempt: "a", Claim: "c", NoRetry: "n", Code: "errown-code", Storm: "errown-storm", Root: "errown-root", Shed: "errown-shed"},
				Mode:         ModeEnforce,
				MaxBodyBytes: 7,
				Budget:       BudgetConfig{Ratio: 0.5, NoFloor: true, Window: time.Second, Disabled: true},
				Overload:     DefaultConfig().Overload,
				Policies: []PolicyConfig{{
					Service:        "s",
					Procedure:      "p",
					MaxAttempts:    1,
					RetryableCodes: []string{"aborted"},
					InitialBackoff: time.Millisecond,
					MaxBackoff:     2 * time.Millisecond,
					AttemptTimeout: time.Second,
					MinRemaining:   3 * time.Millisecond,
					Idempotent:     new(false),
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.give.withDefaults(), "withDefaults()")
		})
	}
}

func TestConfigWithDefaultsLeavesCallerAlone(t *testing.T) {
	give := Config{Policies: []PolicyConfig{{Service: "s"}}}

	_ = give.withDefaults()

	assert.Equal(t, PolicyConfig{Service: "s"}, give.Policies[0], "caller's policy must be unchanged")
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		give Config
		want []string
	}{
		{name: "empty config is valid", give: Config{}},
		{
			name: "valid policies",
			give: Config{Policies: []PolicyConfig{
				{Service: "s", Idempotent: new(true)},
				{Service: "s", Procedure: "p", MaxAttempts: 10, RetryableCodes: []string{"Resource-Exhausted"}, Idempotent: new(true)},
				{Service: "t", MaxAttempts: 1, InitialBackoff: time.Second, MaxBackoff: time.Second, Idempotent: new(false)},
			}},
		},
		{
			name: "budget limits are valid",
			give: Config{Budget: BudgetConfig{Ratio: 1000, NoFloor: true}},
		},
		{
			name: "several bad fields at once",
			give: Config{
				Headers:      ownership.Headers{Attempt: "Errown-Attempt"},
				MaxBodyBytes: -1,
				Budget:       BudgetConfig{Ratio: -0.5, MinPerSecond: -1.0, Window: -time.Second},
				Overload:     DefaultConfig().Overload,
				Policies: []PolicyConfig{
					{Service: "ok", Idempotent: new(true)},
					{Service: "s", MaxAttempts: 11, RetryableCodes: []string{"ok", "nope"}, Idempotent: new(true)},
					{MaxAttempts: -1, InitialBackoff: -time.Millisecond, MaxBackoff: -time.Second, AttemptTimeout: -time.Second, MinRemaining: -time.Second},
				},
			},
			want: []string{
				`attemptHeader: must be lower-case letters, digits and '-', got "Errown-Attempt"`,
				`budget.ratio: must be between 0 and 1000, got -0.5`,
				`budget.minPerSecond: must be >= 0 and finite, got -1`,
				`budget.window: must be > 0, got -1s`,
				`maxBodyBytes: must be >= 0, got -1`,
				`policies[1].maxAttempts: must be between 1 and 10, got 11`,
				`policies[1].retryableCodes[0]: must not be ok, got "ok"`,
				`policies[1].retryableCodes[1]: unknown yarpc code, got "nope"`,
				`policies[2].service: must not be empty, got ""`,
				`policies[2].maxAttempts: must be between 1 and 10, got -1`,
				`policies[2].initialBackoff: must be >= 0, got -1ms`,
				`policies[2].maxBackoff: must be >= 0, got -1s`,
				`policies[2].attemptTimeout: must be >= 0, got -1s`,
				`policies[2].minRemaining: must be >= 0, got -1s`,
				`policies[2].idempotent: must be set: true when the procedure is safe to send again, false when it is not`,
			},
		},
		{
			name: "ratio too large, NaN and infinite floor",
			give: Config{Budget: BudgetConfig{Ratio: 1001, MinPerSecond: math.Inf(1)}},
			want: []string{
				`budget.ratio: must be between 0 and 1000, got 1001`,
				`budget.minPerSecond: must be >= 0 and finite, got +Inf`,
			},
		},
		{
			name: "NaN",
			give: Config{Budget: BudgetConfig{Ratio: math.NaN(), MinPerSecond: math.NaN()}},
			want: []string{
				`budget.ratio: must be between 0 and 1000, got NaN`,
				`budget.minPerSecond: must be >= 0 and finite, got NaN`,
			},
		},
		{
			name: "initial backoff above max (default max)",
			give: Config{Policies: []PolicyConfig{{Service: "s", InitialBackoff: 2 * time.Second, Idempotent: new(true)}}},
			want: []string{`policies[0].initialBackoff: must be <= maxBackoff (1s), got 2s`},
		},
		{
			name: "duplicate service and procedure",
			give: Config{Policies: []PolicyConfig{
				{Service: "s", Idempotent: new(true)}, {Service: "s", Procedure: "p", Idempotent: new(true)},
				{Service: "s", Idempotent: new(true)}, {Service: "s", Procedure: "p", Idempotent: new(true)},
			}},
			want: []string{
				`policies[2]: duplicate of policies[0] for service "s", procedure ""`,
				`policies[3]: duplicate of policies[1] for service "s", procedure "p"`,
			},
		},
		{
			name: "idempotent unset",
			give: Config{Policies: []PolicyConfig{{Service: "s", Idempotent: new(true)}, {Service: "t"}}},
			want: []string{`policies[1].idempotent: must be set: true when the procedure is safe to send again, false when it is not`},
		},
		{
			name: "no floor is valid",
			give: Config{Budget: BudgetConfig{NoFloor: true}},
		},
		{
			name: "no floor with a floor",
			give: Config{Budget: BudgetConfig{MinPerSecond: 5, NoFloor: true}},
			want: []string{`budget.noFloor: must be false when minPerSecond is set, got minPerSecond 5`},
		},
		{
			name: "bad header names",
			give: Config{Headers: ownership.Headers{Claim: "x claim", NoRetry: "x:retry"}},
			want: []string{
				`claimHeader: must be lower-case letters, digits and '-', got "x claim"`,
				`noRetryHeader: must be lower-case letters, digits and '-', got "x:retry"`,
			},
		},
		{
			name: "headers must differ",
			give: Config{Headers: ownership.Headers{Attempt: "errown-claim", NoRetry: "errown-claim"}},
			want: []string{
				`attemptHeader: "errown-claim" is already used by claimHeader`,
				`noRetryHeader: "errown-claim" is already used by attemptHeader`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, err := range multierr.Errors(tt.give.Validate()) {
				got = append(got, err.Error())
			}
			assert.Equal(t, tt.want, got, "Validate() errors")
		})
	}
}

// TestConfigValidateKeysRelative: used alone, a Config names its keys from
// its own root; the "retry." in front is errown.Config's to add.
func TestConfigValidateKeysRelative(t *testing.T) {
	err := Config{Policies: []PolicyConfig{{Service: "s", MaxAttempts: 11, Idempotent: new(true)}}}.Validate()

	want := "policies[0].maxAttempts: must be between 1 and 10, got 11"
	assert.EqualError(t, err, want, "Validate()")
}

func TestConfigYAMLIdempotent(t *testing.T) {
	tests := []struct {
		name string
		give string
		want []string
	}{
		{name: "true", give: "policies: [{service: s, idempotent: true}]"},
		{name: "false", give: "policies: [{service: s, idempotent: false}]"},
		{
			name: "unset",
			give: "policies: [{service: s}]",
			want: []string{"policies[0].idempotent: must be set: true when the procedure is safe to send again, false when it is not"},
		},
		{
			name: "null",
			give: "policies: [{service: s, idempotent: null}]",
			want: []string{"policies[0].idempotent: must be set: true when the procedure is safe to send again, false when it is not"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			require.NoError(t, yaml.UnmarshalStrict([]byte(tt.give), &cfg), "unmarshal")
			var got []string
			for _, err := range multierr.Errors(cfg.Validate()) {
				got = append(got, err.Error())
			}
			assert.Equal(t, tt.want, got, "Validate() errors")
		})
	}
}

func TestConfigYAML(t *testing.T) {
	give := `
maxBodyBytes: 4096
budget:
  ratio: 0.2
  noFloor: true
  window: 30s
  disabled: true
policies:
  - service: users
    procedure: Users::get
    maxAttempts: 3
    retryableCodes: [unavailable, resource-exhausted]
    initialBackoff: 5ms
    maxBackoff: 200ms
    attemptTimeout: 1s
    minRemaining: 20ms
    idempotent: false
`
	want := Config{
		MaxBodyBytes: 4096,
		Budget:       BudgetConfig{Ratio: 0.2, NoFloor: true, Window: 30 * time.Second, Disabled: true},
		Policies: []PolicyConfig{{
			Service:        "users",
			Procedure:      "Users::get",
			MaxAttempts:    3,
			RetryableCodes: []string{"unavailable", "resource-exhausted"},
			InitialBackoff: 5 * time.Millisecond,
			MaxBackoff:     200 * time.Millisecond,
			AttemptTimeout: time.Second,
			MinRemaining:   20 * time.Millisecond,
			Idempotent:     new(false),
		}},
	}

	var got Config
	require.NoError(t, yaml.UnmarshalStrict([]byte(give), &got), "unmarshal")

	assert.Equal(t, want, got, "decoded")
	assert.NoError(t, got.Validate(), "Validate")

	// The header names and the mode are errown.Config's, at its root.
	for _, give := range []string{"claimHeader: x-claim\n", "mode: observe\n"} {
		assert.Error(t, yaml.UnmarshalStrict([]byte(give), new(Config)), give)
	}
}
