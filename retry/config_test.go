package retry

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

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
			name: "zero values take defaults",
			give: Config{Policies: []PolicyConfig{{Service: "s"}}},
			want: Config{
				AttemptHeader: "errown-attempt",
				ClaimHeader:   "errown-claim",
				NoRetryHeader: "errown-no-retry",
				CodeHeader:    "errown-code",
				MaxBodyBytes:  1 << 20,
				Budget:        BudgetConfig{Ratio: 0.1, MinPerSecond: new(10.0), Window: 10 * time.Second},
				Policies: []PolicyConfig{{
					Service:        "s",
					MaxAttempts:    2,
					RetryableCodes: []string{"unknown", "deadline-exceeded", "internal", "unavailable"},
					InitialBackoff: 10 * time.Millisecond,
					MaxBackoff:     time.Second,
					MinRemaining:   5 * time.Millisecond,
					Idempotent:     new(true),
				}},
			},
		},
		{
			name: "set values kept, a zero floor among them",
			give: Config{
				AttemptHeader: "a",
				ClaimHeader:   "c",
				NoRetryHeader: "n",
				MaxBodyBytes:  7,
				Budget:        BudgetConfig{Ratio: 0.5, MinPerSecond: new(0.0), Window: time.Second, Disabled: true},
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
				AttemptHeader: "a",
				ClaimHeader:   "c",
				NoRetryHeader: "n",
				CodeHeader:    "errown-code",
				MaxBodyBytes:  7,
				Budget:        BudgetConfig{Ratio: 0.5, MinPerSecond: new(0.0), Window: time.Second, Disabled: true},
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
			if got := tt.give.withDefaults(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfigWithDefaultsLeavesCallerAlone(t *testing.T) {
	give := Config{Policies: []PolicyConfig{{Service: "s"}}}

	_ = give.withDefaults()

	if want := (PolicyConfig{Service: "s"}); !reflect.DeepEqual(give.Policies[0], want) {
		t.Errorf("caller's policy = %+v, want %+v unchanged", give.Policies[0], want)
	}
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
				{Service: "s"},
				{Service: "s", Procedure: "p", MaxAttempts: 10, RetryableCodes: []string{"Resource-Exhausted"}},
				{Service: "t", MaxAttempts: 1, InitialBackoff: time.Second, MaxBackoff: time.Second},
			}},
		},
		{
			name: "budget limits are valid",
			give: Config{Budget: BudgetConfig{Ratio: 1000, MinPerSecond: new(0.0)}},
		},
		{
			name: "several bad fields at once",
			give: Config{
				AttemptHeader: "Errown-Attempt",
				MaxBodyBytes:  -1,
				Budget:        BudgetConfig{Ratio: -0.5, MinPerSecond: new(-1.0), Window: -time.Second},
				Policies: []PolicyConfig{
					{Service: "ok"},
					{Service: "s", MaxAttempts: 11, RetryableCodes: []string{"ok", "nope"}},
					{MaxAttempts: -1, InitialBackoff: -time.Millisecond, MaxBackoff: -time.Second, AttemptTimeout: -time.Second, MinRemaining: -time.Second},
				},
			},
			want: []string{
				`retry.attemptHeader: must be lower-case letters, digits and '-', got "Errown-Attempt"`,
				`retry.budget.ratio: must be between 0 and 1000, got -0.5`,
				`retry.budget.minPerSecond: must be >= 0 and finite, got -1`,
				`retry.budget.window: must be > 0, got -1s`,
				`retry.maxBodyBytes: must be >= 0, got -1`,
				`retry.policies[1].maxAttempts: must be between 1 and 10, got 11`,
				`retry.policies[1].retryableCodes[0]: must not be ok, got "ok"`,
				`retry.policies[1].retryableCodes[1]: unknown yarpc code, got "nope"`,
				`retry.policies[2].service: must not be empty, got ""`,
				`retry.policies[2].maxAttempts: must be between 1 and 10, got -1`,
				`retry.policies[2].initialBackoff: must be >= 0, got -1ms`,
				`retry.policies[2].maxBackoff: must be >= 0, got -1s`,
				`retry.policies[2].attemptTimeout: must be >= 0, got -1s`,
				`retry.policies[2].minRemaining: must be >= 0, got -1s`,
			},
		},
		{
			name: "ratio too large, NaN and infinite floor",
			give: Config{Budget: BudgetConfig{Ratio: 1001, MinPerSecond: new(math.Inf(1))}},
			want: []string{
				`retry.budget.ratio: must be between 0 and 1000, got 1001`,
				`retry.budget.minPerSecond: must be >= 0 and finite, got +Inf`,
			},
		},
		{
			name: "NaN",
			give: Config{Budget: BudgetConfig{Ratio: math.NaN(), MinPerSecond: new(math.NaN())}},
			want: []string{
				`retry.budget.ratio: must be between 0 and 1000, got NaN`,
				`retry.budget.minPerSecond: must be >= 0 and finite, got NaN`,
			},
		},
		{
			name: "initial backoff above max (default max)",
			give: Config{Policies: []PolicyConfig{{Service: "s", InitialBackoff: 2 * time.Second}}},
			want: []string{`retry.policies[0].initialBackoff: must be <= maxBackoff (1s), got 2s`},
		},
		{
			name: "duplicate service and procedure",
			give: Config{Policies: []PolicyConfig{
				{Service: "s"}, {Service: "s", Procedure: "p"}, {Service: "s"}, {Service: "s", Procedure: "p"},
			}},
			want: []string{
				`retry.policies[2]: duplicate of retry.policies[0] for service "s", procedure ""`,
				`retry.policies[3]: duplicate of retry.policies[1] for service "s", procedure "p"`,
			},
		},
		{
			name: "bad header names",
			give: Config{ClaimHeader: "x claim", NoRetryHeader: "x:retry"},
			want: []string{
				`retry.claimHeader: must be lower-case letters, digits and '-', got "x claim"`,
				`retry.noRetryHeader: must be lower-case letters, digits and '-', got "x:retry"`,
			},
		},
		{
			name: "headers must differ",
			give: Config{AttemptHeader: "errown-claim", NoRetryHeader: "errown-claim"},
			want: []string{
				`retry.attemptHeader: must differ from claimHeader and noRetryHeader, got "errown-claim"`,
				`retry.noRetryHeader: must differ from claimHeader, got "errown-claim"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, err := range multierr.Errors(tt.give.Validate()) {
				got = append(got, err.Error())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Validate() errors:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

func TestConfigYAML(t *testing.T) {
	give := `
attemptHeader: x-attempt
claimHeader: x-claim
noRetryHeader: x-no-retry
maxBodyBytes: 4096
budget:
  ratio: 0.2
  minPerSecond: 0
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
		AttemptHeader: "x-attempt",
		ClaimHeader:   "x-claim",
		NoRetryHeader: "x-no-retry",
		MaxBodyBytes:  4096,
		Budget:        BudgetConfig{Ratio: 0.2, MinPerSecond: new(0.0), Window: 30 * time.Second, Disabled: true},
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
	if err := yaml.UnmarshalStrict([]byte(give), &got); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}

	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func FuzzConfig(f *testing.F) {
	f.Add("policies: [{service: s, maxAttempts: 3}]")
	f.Add("budget: {ratio: -1, window: -1s}\npolicies: [{service: '', retryableCodes: [ok, x]}]")
	f.Add("attemptHeader: Bad Header")
	f.Fuzz(func(t *testing.T, give string) {
		var cfg Config
		if yaml.Unmarshal([]byte(give), &cfg) != nil {
			return
		}
		// Never panics; exactly one of a middleware and an error.
		m, err := New(cfg)
		if (m == nil) == (err == nil) {
			t.Fatalf("New = %v, %v; want exactly one", m, err)
		}
		if err != nil {
			return
		}
		// What is accepted is within the documented bounds.
		d := cfg.withDefaults()
		if !(d.Budget.Ratio >= 0 && d.Budget.Ratio <= MaxBudgetRatio) || !(*d.Budget.MinPerSecond >= 0) || d.Budget.Window <= 0 {
			t.Fatalf("accepted budget %+v", d.Budget)
		}
		for _, p := range d.Policies {
			if p.MaxAttempts < 1 || p.MaxAttempts > MaxMaxAttempts || p.Service == "" ||
				p.InitialBackoff < 0 || p.MaxBackoff < p.InitialBackoff || p.AttemptTimeout < 0 || p.MinRemaining < 0 {
				t.Fatalf("accepted policy %+v", p)
			}
		}
	})
}
