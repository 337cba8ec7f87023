package retrier

import (
	"testing"
	"time"

	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/uber-go/tally/v4"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestPolicyRetryableCode(t *testing.T) {
	defaults := compilePolicy(policyDefaults(retry.PolicyConfig{Service: "s", Idempotent: new(true)}), retry.ModeEnforce)
	custom := compilePolicy(policyDefaults(retry.PolicyConfig{Service: "s", RetryableCodes: []string{"Resource-Exhausted", "data-loss"}, Idempotent: new(true)}), retry.ModeEnforce)
	tests := []struct {
		give        yarpcerrors.Code
		wantDefault bool
		wantCustom  bool
	}{
		{yarpcerrors.CodeOK, false, false},
		{yarpcerrors.CodeCancelled, false, false},
		{yarpcerrors.CodeUnknown, true, false},
		{yarpcerrors.CodeInvalidArgument, false, false},
		{yarpcerrors.CodeDeadlineExceeded, true, false},
		{yarpcerrors.CodeNotFound, false, false},
		{yarpcerrors.CodeAlreadyExists, false, false},
		{yarpcerrors.CodePermissionDenied, false, false},
		{yarpcerrors.CodeResourceExhausted, false, true},
		{yarpcerrors.CodeFailedPrecondition, false, false},
		{yarpcerrors.CodeAborted, false, false},
		{yarpcerrors.CodeOutOfRange, false, false},
		{yarpcerrors.CodeUnimplemented, false, false},
		{yarpcerrors.CodeInternal, true, false},
		{yarpcerrors.CodeUnavailable, true, false},
		{yarpcerrors.CodeDataLoss, false, true},
		{yarpcerrors.CodeUnauthenticated, false, false},
		{yarpcerrors.Code(63), false, false},
		{yarpcerrors.Code(64), false, false},
		{yarpcerrors.Code(1000), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.give.String(), func(t *testing.T) {
			assert.Equal(t, tt.wantDefault, defaults.retryableCode(tt.give), "default policy retryableCode(%v)", tt.give)
			assert.Equal(t, tt.wantCustom, custom.retryableCode(tt.give), "custom policy retryableCode(%v)", tt.give)
		})
	}
}

func TestCompilePolicy(t *testing.T) {
	give := retry.PolicyConfig{
		Service:        "s",
		MaxAttempts:    4,
		RetryableCodes: []string{"aborted"},
		InitialBackoff: time.Millisecond,
		MaxBackoff:     time.Second,
		AttemptTimeout: time.Minute,
		MinRemaining:   time.Hour,
		Idempotent:     new(false),
	}
	want := policy{
		maxAttempts:    4,
		retryable:      1 << yarpcerrors.CodeAborted,
		initialBackoff: time.Millisecond,
		maxBackoff:     time.Second,
		attemptTimeout: time.Minute,
		minRemaining:   time.Hour,
		idempotent:     false,
	}

	assert.Equal(t, want, *compilePolicy(give, retry.ModeEnforce), "compilePolicy")
}

// policyAttempts returns the maxAttempts of the policy callees have for
// service and procedure: 0 when the callee has no such policy, -1 when
// there is no callee.
func policyAttempts(callees map[string]*callee, service, procedure string) int {
	c, ok := callees[service]
	if !ok {
		return -1
	}
	if p := c.policy(procedure); p != nil {
		return p.maxAttempts
	}
	return 0
}

func TestCalleeLookup(t *testing.T) {
	cfg := withDefaults(retry.Config{Policies: []retry.PolicyConfig{
		{Service: "a", MaxAttempts: 2, Idempotent: new(true)},
		{Service: "a", Procedure: "get", MaxAttempts: 3, Idempotent: new(true)},
		{Service: "b", Procedure: "get", MaxAttempts: 4, Idempotent: new(true)},
	}})
	callees := compileCallees(cfg, tally.NoopScope, newBudgetClock(newClock().Now, 0, nil))
	tests := []struct {
		giveService   string
		giveProcedure string
		want          int
	}{
		{"a", "get", 3},  // the exact procedure wins
		{"a", "put", 2},  // the service-wide policy
		{"a", "", 2},     // the service-wide policy
		{"b", "get", 4},  // only a procedure policy
		{"b", "put", 0},  // callee known, no policy
		{"c", "get", -1}, // unknown callee
		{"A", "get", -1}, // service names are exact
	}
	for _, tt := range tests {
		t.Run(tt.giveService+"::"+tt.giveProcedure, func(t *testing.T) {
			assert.Equal(t, tt.want, policyAttempts(callees, tt.giveService, tt.giveProcedure), "policy maxAttempts")
		})
	}
	assert.NotSame(t, callees["a"].budget, callees["b"].budget, "callees a and b share a budget, want one each")
}

// policyDefaults returns p with its defaults, as the retry middleware sets them (withDefaults).
func policyDefaults(p retry.PolicyConfig) retry.PolicyConfig {
	return withDefaults(retry.Config{Policies: []retry.PolicyConfig{p}}).Policies[0]
}
