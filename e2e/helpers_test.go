package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/internal/retrier"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/yarpcerrors"
)

// Service names. yarpc wants at least two characters.
const (
	_a = "svc-a"
	_b = "svc-b"
	_c = "svc-c"
	_d = "svc-d"
)

// _transports are the transports every end-to-end scenario runs over.
var _transports = []string{errowntest.HTTP, errowntest.GRPC, errowntest.TChannel}

// _tiny is the backoff of every policy: retries are immediate in effect.
const _tiny = time.Millisecond

// fail is the Handler of a node where the failure begins: it calls its
// callees, then fails with unavailable.
func fail(name string) errowntest.Handler {
	return errowntest.Fail(yarpcerrors.UnavailableErrorf("%s is down", name))
}

// policies returns a PolicyConfig per callee: two attempts, tiny backoff.
func policies(callees ...string) []retry.PolicyConfig {
	ps := make([]retry.PolicyConfig, 0, len(callees))
	for _, c := range callees {
		ps = append(ps, retry.PolicyConfig{
			Service:        c,
			MaxAttempts:    2,
			InitialBackoff: _tiny,
			MaxBackoff:     _tiny,
			Idempotent:     new(true),
		})
	}
	return ps
}

// generous is a budget that never limits these tests: one retry per
// request.
func generous() retry.BudgetConfig {
	return retry.BudgetConfig{Ratio: 1}
}

// withRetries is an errown config with a policy for each callee.
func withRetries(callees ...string) *errown.Config {
	return &errown.Config{Retry: errown.RetryConfig{Budget: generous(), Policies: policies(callees...)}}
}

// withDeps is withRetries with dependency declarations.
func withDeps(deps []depmem.Declaration, callees ...string) *errown.Config {
	cfg := withRetries(callees...)
	cfg.Dependencies = deps
	return cfg
}

// plainRetry is retry middleware with no errown around it: retries with no
// ownership, for the baseline storm.
func plainRetry(t *testing.T, callees ...string) *retrier.Middleware {
	t.Helper()
	m, err := retrier.New(retry.Config{Budget: generous(), Policies: policies(callees...)})
	require.NoError(t, err, "retrier.New")
	return m
}

// result is what a scenario is judged on.
type result struct {
	// Code and Claim of the reply the outside caller got.
	Code  yarpcerrors.Code
	Claim string
	// Served by each node.
	Served map[string]int64
	// Attempts on every edge, in the order they ended, as
	// errowntest.Attempt.String writes them: "caller->callee#n code claim".
	Attempts []string
}

// observe collects the result of a call from outside.
func observe(mesh *errowntest.Mesh, reply errowntest.Reply, nodes ...string) result {
	r := result{Code: reply.Code(), Claim: reply.Claim, Served: make(map[string]int64, len(nodes))}
	for _, n := range nodes {
		r.Served[n] = mesh.Service(n).Served()
	}
	r.Attempts = formatAttempts(mesh.Recorder().Attempts())
	return r
}

func assertResult(t *testing.T, want, got result) {
	t.Helper()
	assert.Equal(t, want.Code, got.Code, "outside caller's code (claim %q)", got.Claim)
	assert.Equal(t, want.Claim, got.Claim, "outside caller's claim (code %v)", got.Code)
	assert.Equal(t, want.Served, got.Served, "served")
	assert.Equal(t, want.Attempts, got.Attempts, "attempts, hop by hop:\n got\n\t%s\nwant\n\t%s",
		strings.Join(got.Attempts, "\n\t"), strings.Join(want.Attempts, "\n\t"))
}

// attempt formats one expected attempt that failed with unavailable, like
// errowntest.Attempt.String.
func attempt(caller, callee string, n int, claim string) string {
	return attemptCode(caller, callee, n, claim, yarpcerrors.CodeUnavailable)
}

// attemptCode formats one expected attempt that ended with code.
func attemptCode(caller, callee string, n int, claim string, code yarpcerrors.Code) string {
	return errowntest.Attempt{Caller: caller, Service: callee, Attempt: n, Code: code, Claim: claim}.String()
}

// formatAttempts formats recorded attempts with errowntest.Attempt.String.
func formatAttempts(attempts []errowntest.Attempt) []string {
	s := make([]string, 0, len(attempts))
	for _, a := range attempts {
		s = append(s, a.String())
	}
	return s
}

// concat joins lists of attempts.
func concat(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

// callCtx bounds a call from outside.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ok formats one expected successful first attempt.
func ok(caller, callee string) string {
	return attemptCode(caller, callee, 1, _missing, yarpcerrors.CodeOK)
}
