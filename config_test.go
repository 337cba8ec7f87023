package errown

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/outbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	"go.uber.org/multierr"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
	"gopkg.in/yaml.v2"
)

const fullYAML = `
claimHeader: x-claim
attemptHeader: x-attempt
noRetryHeader: x-stop
unknownEdges: coincidental
ingress:
  shards: 16
  maxInFlight: 5000
retry:
  maxBodyBytes: 4096
  budget:
    ratio: 0.2
    window: 30s
  policies:
    - service: users
      maxAttempts: 3
      initialBackoff: 5ms
      maxBackoff: 100ms
      retryableCodes: [unavailable, internal]
      idempotent: true
    - service: users
      procedure: create
      idempotent: false
dependencies:
  - service: cache
    kind: fail-open
  - callerProcedure: checkout
    service: payments
    kind: fail-close
  - service: search
    procedure: suggest
    kind: unknown
memory:
  openThreshold: 0.1
  noHysteresis: true
`

func TestConfigFromYAML(t *testing.T) {
	c, err := ConfigFromYAML([]byte(fullYAML))
	require.NoError(t, err)
	assert.Equal(t, "x-claim", c.Headers.Claim)
	assert.Equal(t, "coincidental", c.UnknownEdges)
	assert.Equal(t, 16, c.Ingress.Shards)
	assert.Equal(t, 4096, c.Retry.MaxBodyBytes)
	assert.Equal(t, 0.2, c.Retry.Budget.Ratio)
	assert.Equal(t, 30*time.Second, c.Retry.Budget.Window)
	require.Len(t, c.Retry.Policies, 2)
	assert.Equal(t, 3, c.Retry.Policies[0].MaxAttempts)
	assert.Equal(t, 5*time.Millisecond, c.Retry.Policies[0].InitialBackoff)
	require.NotNil(t, c.Retry.Policies[0].Idempotent)
	assert.True(t, *c.Retry.Policies[0].Idempotent)
	require.NotNil(t, c.Retry.Policies[1].Idempotent)
	assert.False(t, *c.Retry.Policies[1].Idempotent)
	assert.Equal(t, []depmem.Declaration{
		{Service: "cache", Kind: new(ownership.KindFailOpen)},
		{CallerProcedure: "checkout", Service: "payments", Kind: new(ownership.KindFailClose)},
		{Service: "search", Procedure: "suggest", Kind: new(ownership.KindUnknown)},
	}, c.Dependencies)
	assert.Equal(t, defaults.Fill(depmem.Config{OpenThreshold: 0.1, NoHysteresis: true}, depmem.DefaultConfig()), c.Memory)
	assert.Equal(t, 0.0, c.Memory.Hysteresis, "noHysteresis: true")
	assert.Equal(t, DefaultConfig().Memory.Window, c.Memory.Window, "a key left out: its default")
}

func TestConfigRoundTrip(t *testing.T) {
	c, err := ConfigFromYAML([]byte(fullYAML))
	require.NoError(t, err)
	b, err := yaml.Marshal(c)
	require.NoError(t, err)
	again, err := ConfigFromYAML(b)
	require.NoError(t, err, string(b))
	assert.Equal(t, c, again)
}

func TestConfigFromYAMLEmpty(t *testing.T) {
	for _, give := range []string{"", "  \n", "{}"} {
		c, err := ConfigFromYAML([]byte(give))
		require.NoError(t, err, "%q", give)
		assert.Equal(t, DefaultConfig(), c)
	}
}

func TestConfigFromYAMLErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"claimHedaer: x", []string{"errown: config: claimHedaer: unknown key, did you mean claimHeader?"}},
		{"retry:\n  policies:\n    - service: a\n      idempotent: true\n      max_attempts: 3", []string{"retry.policies[0].max_attempts: unknown key, did you mean maxAttempts?"}},
		{"retry:\n  budgett: {}", []string{"retry.budgett: unknown key"}},
		{"ingress:\n  shards: three", []string{`errown: config: ingress.shards: want an integer, got string "three"`}},
		{"ingress:\n  shards: 1.5", []string{`ingress.shards: want an integer, got number "1.5"`}},
		{"retry:\n  budget:\n    ratio: lots", []string{`retry.budget.ratio: want a number, got string "lots"`}},
		{"retry:\n  budget:\n    window: forever", []string{`retry.budget.window: want a duration such as 10s, got string "forever"`}},
		{"retry:\n  budget:\n    disabled: maybe", []string{`retry.budget.disabled: want true or false, got string "maybe"`}},
		{"retry:\n  policies:\n    - service: a\n      idempotent: true\n      attemptTimeout: 500", []string{`retry.policies[0].attemptTimeout: want a duration such as 10s, got integer "500"`}},
		{"retry:\n  policies: users", []string{`retry.policies: want a list, got string "users"`}},
		{"retry:\n  policies:\n    - service: [a, b]\n      idempotent: true", []string{`retry.policies[0].service: want a string, got a list`}},
		{"retry:\n  policies:\n    - service: a\n      idempotent: 3", []string{`retry.policies[0].idempotent: want true or false, got integer "3"`}},
		{"memory:\n  openThreshold: low\n  snapshot: /tmp/x", []string{`memory.openThreshold: want a number, got string "low"`, `memory.snapshot: want a mapping, got string "/tmp/x"`}},
		{"dependencies:\n  - service: a\n    kinds: fail-open", []string{"dependencies[0].kinds: unknown key"}},
		{"ingress:\n  shards: 3\n  maxInFlight: -1", []string{"ingress.shards: must be a power of two", "got 3", "ingress.maxInFlight: must be positive, got -1"}},
		{"unknownEdges: sometimes", []string{`unknownEdges: must be "correlated" or "coincidental", got "sometimes"`}},
		{"claimHeader: X-Claim", []string{`errown: config: claimHeader: must be lower-case letters, digits and '-', got "X-Claim"`}},
		{"claimHeader: same\nnoRetryHeader: same", []string{`noRetryHeader: "same" is already used by claimHeader`}},
		{"dependencies:\n  - service: cache\n    kind: soft", []string{`errown: config: dependencies[0].kind: unknown edge kind "soft" (want fail-close, fail-open or unknown)`}},
		{"dependencies:\n  - service: cache", []string{"errown: config: dependencies[0].kind: must be set: fail-close, fail-open or unknown"}},
		{"dependencies:\n  - service: cache\n    kind:", []string{"dependencies[0].kind: must be set: fail-close, fail-open or unknown"}},
		{"dependencies:\n  - service: cache\n    kind: [fail-open]", []string{"dependencies[0].kind: want a string, got a list"}},
		{"dependencies:\n  - service: cache\n    kind: {fail: open}", []string{"dependencies[0].kind: want a string, got a mapping"}},
		{"dependencies:\n  - service: cache\n    kind: 2", []string{`dependencies[0].kind: want a string, got integer "2"`}},
		{"dependencies:\n  - service: cache\n    kind: 0.5", []string{`dependencies[0].kind: want a string, got number "0.5"`}},
		{"dependencies:\n  - service: cache\n    kind: true", []string{`dependencies[0].kind: want a string, got boolean "true"`}},
		{"memory:\n  noHysteresis: yes please", []string{`memory.noHysteresis: want true or false, got string "yes please"`}},
		{"memory:\n  hysteresis: 0.1\n  noHysteresis: true", []string{"errown: config: memory.noHysteresis: must be false when hysteresis is set, got hysteresis 0.1"}},
		{"memory:\n  openThreshold: -0.1", []string{"errown: config: memory.openThreshold: must be in (0, 1), got -0.1"}},
		{"memory:\n  window: -1s", []string{"errown: config: memory.window: must be positive, got -1s"}},
		{"memory:\n  fleet:\n    url: http://x", []string{"memory.fleet.selector: required with fleet.url"}},
		{"retry:\n  policies:\n    - service: users\n      idempotent: true\n      maxAttempts: -1", []string{"retry.policies[0].maxAttempts", "-1"}},
		{"retry:\n  policies:\n    - service: users", []string{"errown: config: retry.policies[0].idempotent: must be set: true when the procedure is safe to send again, false when it is not"}},
		{"retry:\n  budget:\n    minPerSecond: -1\n    noFloor: maybe", []string{`retry.budget.noFloor: want true or false, got string "maybe"`}},
		{"retry:\n  budget:\n    minPerSecond: 2\n    noFloor: true", []string{"errown: config: retry.budget.noFloor: must be false when minPerSecond is set, got minPerSecond 2"}},
		{"retry:\n  budget:\n    ratio: -1", []string{"retry.budget.ratio", "-1"}},
		{"retry:\n  overload:\n    threshold: 1", []string{"errown: config: retry.overload.threshold: must be in (0, 1), got 1"}},
		{"memory:\n  closeThreshold: 0.1", []string{"memory.openThreshold: must be below closeThreshold 0.1, got 0.2"}},
		{"ingress: [1]\nretry: 7", []string{"ingress: want a mapping, got a list", `retry: want a mapping, got integer "7"`}},
		{"claimHeader: [unclosed", []string{"errown: config: yaml:"}},
		{"- a\n- b", []string{"errown: config: errown: want a mapping, got a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			_, err := ConfigFromYAML([]byte(tt.give))
			require.Error(t, err)
			for _, want := range tt.want {
				assert.ErrorContains(t, err, want)
			}
		})
	}
}

// TestConfigFromYAMLParsedOnce: the document is parsed once and read
// from the parsed form, checks first: a key written twice is refused,
// anchors and aliases are read, and a value checkYAML refuses is
// reported by itself, with no strict decoding error beside it.
func TestConfigFromYAMLParsedOnce(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		want    Config
		wantErr []string
	}{
		{name: "a key twice", give: "mode: observe\nmode: enforce",
			wantErr: []string{"errown: config: yaml: unmarshal errors:\n  line 2: field mode already set in type errown.Config"}},
		{name: "a nested key twice", give: "retry:\n  budget:\n    ratio: 0.5\n    ratio: 0.2",
			wantErr: []string{"errown: config: yaml: unmarshal errors:\n  line 4: field ratio already set in type retry.BudgetConfig"}},
		{name: "a key twice, the first a refused zero", give: "retry:\n  budget:\n    ratio: 0\n    ratio: 0.2",
			wantErr: []string{"errown: config: retry.budget.ratio: 0 would mean the default 0.1; for a budget that is nearly all floor write a tiny ratio such as 0.0001"}},
		{name: "an alias", give: "admission: &a {maxQueue: 3}\nedge: {}",
			want: func() Config { c := DefaultConfig(); c.Admission.MaxQueue = 3; return c }()},
		{name: "checked only", give: "ingress:\n  shards: three",
			wantErr: []string{`errown: config: ingress.shards: want an integer, got string "three"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConfigFromYAML([]byte(tt.give))
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.wantErr, errorStrings(err))
		})
	}
}

// TestConfigFromYAMLEveryBadKind: every bad edge kind is reported under
// its key, not only the first.
func TestConfigFromYAMLEveryBadKind(t *testing.T) {
	_, err := ConfigFromYAML([]byte(`
dependencies:
  - {service: a, kind: soft}
  - {service: b, kind: fail-open}
  - {service: c, kind: Fail-Close}
  - {service: d, kind: [fail-open]}
  - {service: e, kind: ""}
`))
	require.Error(t, err)
	assert.Equal(t, []string{
		`dependencies[0].kind: unknown edge kind "soft" (want fail-close, fail-open or unknown)`,
		`dependencies[2].kind: unknown edge kind "Fail-Close" (want fail-close, fail-open or unknown)`,
		`dependencies[3].kind: want a string, got a list`,
		`dependencies[4].kind: unknown edge kind "" (want fail-close, fail-open or unknown)`,
	}, errorStrings(errors.Unwrap(err)))
}

func TestConfigHeaderErrorsOnce(t *testing.T) {
	_, err := ConfigFromYAML([]byte("claimHeader: X-Claim\nattemptHeader: same\nnoRetryHeader: same"))
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "claimHeader:"), err.Error())
	assert.Equal(t, 1, strings.Count(err.Error(), `"same" is already used`), err.Error())
	assert.NotContains(t, err.Error(), "retry.claimHeader")
}

// TestConfigSectionKeys: a section's package names its keys from the
// section's own root; Validate puts the section's key in front of each.
func TestConfigSectionKeys(t *testing.T) {
	err := Config{
		InboundConfig: InboundConfig{Ingress: inbound.IngressConfig{Shards: 3, MaxInFlight: -1}},
		Retry: RetryConfig{
			Budget:   retry.BudgetConfig{Window: -time.Second},
			Policies: []retry.PolicyConfig{{Service: "users", MaxAttempts: 11, Idempotent: new(true)}},
		},
		Dependencies: []depmem.Declaration{{Service: "cache"}},
		Memory:       depmem.Config{Window: -time.Second, Hysteresis: 0.1, NoHysteresis: true},
	}.Validate()

	assert.Equal(t, []string{
		"ingress.shards: must be a power of two between 1 and 1024, got 3",
		"ingress.maxInFlight: must be positive, got -1",
		"retry.budget.window: must be > 0, got -1s",
		"retry.policies[0].maxAttempts: must be between 1 and 10, got 11",
		"dependencies[0].kind: must be set: fail-close, fail-open or unknown",
		"memory.window: must be positive, got -1s",
		"memory.noHysteresis: must be false when hysteresis is set, got hysteresis 0.1",
	}, errorStrings(err))
}

func errorStrings(err error) []string {
	var out []string
	for _, e := range multierr.Errors(err) {
		out = append(out, e.Error())
	}
	return out
}

// countingOutbound fails every call with unavailable, counting them.
type countingOutbound struct {
	transport.UnaryOutbound
	calls int
}

func (o *countingOutbound) Call(context.Context, *transport.Request) (*transport.Response, error) {
	o.calls++
	return nil, yarpcerrors.UnavailableErrorf("down")
}

// TestConfigYAMLIdempotent: a policy read from YAML replays a failed call
// when it says idempotent: true, and refuses to when it says false.
func TestConfigYAMLIdempotent(t *testing.T) {
	tests := []struct {
		give        string
		wantCalls   int
		wantRefused int64
	}{
		{give: "true", wantCalls: 2},
		{give: "false", wantCalls: 1, wantRefused: 1},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			cfg, err := ConfigFromYAML([]byte("retry:\n  policies:\n    - {service: callee, initialBackoff: 1ms, maxBackoff: 1ms, idempotent: " + tt.give + "}\n"))
			require.NoError(t, err)
			scope := tally.NewTestScope("", nil)
			m, err := New(cfg, WithScope(scope))
			require.NoError(t, err)
			out := &countingOutbound{}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()

			_, err = middleware.ApplyUnaryOutbound(out, m.Outbound().Unary).Call(ctx,
				&transport.Request{Service: "callee", Procedure: "create", Body: strings.NewReader("x"), BodySize: 1})

			assert.Equal(t, yarpcerrors.CodeUnavailable, yarpcerrors.FromError(err).Code())
			assert.Equal(t, tt.wantCalls, out.calls)
			var refused int64
			if c, ok := scope.Snapshot().Counters()["errown.retry.denied+callee=callee,reason=not-idempotent"]; ok {
				refused = c.Value()
			}
			assert.Equal(t, tt.wantRefused, refused)
		})
	}
}

func FuzzConfigFromYAML(f *testing.F) {
	for _, s := range []string{fullYAML, "", "claimHeader: x", "retry: {policies: [{service: a, idempotent: true}]}", "retry: {budget: {noFloor: true}, policies: [{service: a}]}", "ingress: {shards: 3}", ":", "- [", "dependencies: [{service: a, kind: fail-open}]", "dependencies: [{service: a, kind: 3}, {service: b}, {service: c, kind: !!binary ZmFpbC1vcGVu}]", "memory: {openThreshold: 1e-9, noHysteresis: true, closeThreshold: 0.5}", "retry: {budget: {minPerSecond: 0, noFloor: true}, policies: [{service: a, idempotent: true, attemptTimeout: 0s, maxAttempts: 0}]}", "memory: {hysteresis: 0, window: 0s, fleet: {jointQuery: ''}}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ConfigFromYAML(b)
		if err != nil {
			return
		}
		// What parses is sane (finite numbers), builds, and survives a
		// round trip unchanged.
		for _, v := range []*float64{&c.Memory.OpenThreshold, &c.Memory.Hysteresis, &c.Memory.CloseThreshold, &c.Retry.Budget.Ratio, &c.Retry.Budget.MinPerSecond} {
			require.False(t, math.IsNaN(*v), "accepted a NaN in %q", b)
			require.False(t, math.IsInf(*v, 0), "accepted an infinity in %q", b)
		}
		_, err = New(c)
		require.NoError(t, err, "ConfigFromYAML accepted %q but New refused it", b)
		out, err := yaml.Marshal(c)
		require.NoError(t, err, "marshal")
		again, err := ConfigFromYAML(out)
		require.NoError(t, err, "round trip of %q failed:\n%s", b, out)
		// Every default written out reads back as itself.
		require.Equal(t, c, again, "round trip of %q:\n%s", b, out)
	})
}

// The top-level mode is checked once, under its own key.
func TestConfigMode(t *testing.T) {
	assert.Equal(t, []string{`mode: must be "enforce" or "observe", got "loud"`}, errorStrings(Config{Mode: "loud"}.Validate()))
	assert.NoError(t, Config{Mode: retry.ModeObserve}.Validate())
}

// TestDocConfigurationParses: the configuration reference of
// docs/configuration.md, every key written out, is a configuration errown
// takes.
func TestDocConfigurationParses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "configuration.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Configuration\n")
	require.True(t, ok, "docs/configuration.md has a Configuration section")
	_, block, ok := strings.Cut(section, "```yaml\n")
	require.True(t, ok, "the section has a YAML block")
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)

	var doc map[string]interface{}
	require.NoError(t, yaml.Unmarshal([]byte(block), &doc))
	errownSection, err := yaml.Marshal(doc[_configKey])
	require.NoError(t, err)
	c, err := ConfigFromYAML(errownSection)
	require.NoError(t, err, "%s", errownSection)
	assert.NotEmpty(t, c.Retry.Policies, "the reference shows a policy")
	assert.NotEmpty(t, c.Dependencies, "and a declaration")
}

func TestConfigFromYAMLEdge(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		want    inbound.EdgeConfig
		wantErr string
	}{
		{name: "every way", give: "edge:\n  transports: [http]\n  procedures: [Orders::get]\n  callers: [gateway]\n",
			want: inbound.EdgeConfig{Transports: []string{"http"}, Procedures: []string{"Orders::get"}, Callers: []string{"gateway"}}},
		{name: "a misspelled key", give: "edge:\n  procedurs: [Orders::get]\n", wantErr: "edge.procedurs: unknown key, did you mean procedures?"},
		{name: "an empty name", give: "edge:\n  callers: [gateway, \"\"]\n", wantErr: "edge.callers[1]: must not be empty"},
		{name: "not a list", give: "edge:\n  callers: gateway\n", wantErr: "edge.callers: want a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ConfigFromYAML([]byte(tt.give))
			assert.Equal(t, tt.wantErr == "", err == nil, "%v", err)
			assert.Contains(t, fmt.Sprint(err), tt.wantErr)
			assert.Equal(t, tt.want, cfg.Edge)
		})
	}
}

func TestConfigFromYAMLAdmission(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		want    inbound.AdmissionConfig
		wantErr string
	}{
		{name: "enforce", give: "admission:\n  mode: enforce\n", want: inbound.AdmissionConfig{Mode: inbound.AdmissionEnforce}},
		{name: "every field", give: "admission:\n  mode: observe\n  maxQueue: 8\n  minLimit: 4\n  maxLimit: 64\n",
			want: inbound.AdmissionConfig{Mode: inbound.AdmissionObserve, MaxQueue: 8, MinLimit: 4, MaxLimit: 64}},
		{name: "a misspelled key", give: "admission:\n  maxQueu: 8\n", wantErr: "admission.maxQueu: unknown key, did you mean maxQueue?"},
		{name: "a mode unknown", give: "admission:\n  mode: strict\n", wantErr: `admission.mode: must be "disabled", "observe" or "enforce", got "strict"`},
		{name: "an explicit zero", give: "admission:\n  maxQueue: 0\n", wantErr: "admission.maxQueue"},
		{name: "a negative", give: "admission:\n  minLimit: -1\n", wantErr: "admission.minLimit: must be >= 1, got -1"},
		{name: "limits crossed", give: "admission:\n  minLimit: 10\n  maxLimit: 5\n", wantErr: "admission.maxLimit: must be >= minLimit (10), got 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ConfigFromYAML([]byte(tt.give))
			assert.Equal(t, tt.wantErr == "", err == nil, "%v", err)
			assert.Contains(t, fmt.Sprint(err), tt.wantErr)
			if tt.wantErr == "" {
				assert.Equal(t, defaults.Fill(inbound.Config{Admission: tt.want}, inbound.DefaultConfig()).Admission, cfg.Admission)
			}
		})
	}
}

// TestConfigSectionsTakeTheRoots: the sections' header names and mode
// are the root's, given where their middleware is built; filling the
// defaults neither fills them nor clears what a Go literal put there.
func TestConfigSectionsTakeTheRoots(t *testing.T) {
	give := Config{
		Headers: ownership.Headers{Claim: "my-claim"},
		Mode:    retry.ModeObserve,
		Retry:   RetryConfig{Mode: retry.ModeEnforce, Headers: ownership.Headers{Claim: "ignored"}},
	}
	c := give.withDefaults()
	assert.Equal(t, give.Retry.Headers, c.Retry.Headers, "not filled, not cleared")
	assert.Equal(t, give.Retry.Mode, c.Retry.Mode)
	assert.Equal(t, ownership.Headers{}, c.InboundConfig.Headers)
	assert.Equal(t, ownership.Headers{}, c.OutboundConfig.Headers)

	want := ownership.DefaultHeaders()
	want.Claim = "my-claim"
	in, out, re := c.sections()
	assert.Equal(t, want, in.Headers)
	assert.Equal(t, want, out.Headers)
	assert.Equal(t, want, re.Headers)
	assert.Equal(t, retry.ModeObserve, re.Mode, "the root's mode, whatever the section holds")
	assert.Equal(t, inbound.DefaultConfig().MaxRootProcedures, in.MaxRootProcedures, "the section's own keys filled")
	assert.Equal(t, outbound.DefaultConfig().IncidentWindow, out.IncidentWindow)
	assert.Equal(t, retry.DefaultConfig().Budget, re.Budget)
}
