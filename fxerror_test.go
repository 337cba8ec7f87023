package errown_test

import (
	"strings"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/nethttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
)

// _maxErrorPrefix bounds the characters fx puts in front of errown's own
// words in the start error of an invalid configuration.
const _maxErrorPrefix = 0

// TestConfigErrorLeadsFxError: a configuration errown refuses fails the
// fx application with errown's message first, not behind fx's account of
// the constructors it could not call.
func TestConfigErrorLeadsFxError(t *testing.T) {
	tests := []struct {
		name string
		give string
		want string // errown's own words
	}{
		{"an unknown key", "errown:\n  retry:\n    policies:\n      - {service: users, idempotent: true, maxAtempts: 3}\n", "retry.policies[0].maxAtempts: unknown key, did you mean maxAttempts?"},
		{"a misspelled top-level key", "errwon:\n  mode: observe\n", `found top-level key "errwon", did you mean errown?`},
		{"an invalid value", "errown:\n  mode: enforced\n", "mode:"},
	}
	apps := []struct {
		name string
		opt  fx.Option
	}{
		{"Module", errown.Module},
		{"Grouped", errown.Grouped},
		{"Core", errown.Core},
		// An adapter module before errown.Core takes the *Middleware
		// first.
		{"grpcgo.Module, then Core", fx.Options(grpcgo.Module, errown.Core)},
		{"nethttp.Module, then Core", fx.Options(nethttp.Module, errown.Core)},
	}
	for _, app := range apps {
		for _, tt := range tests {
			t.Run(app.name+"/"+tt.name, func(t *testing.T) {
				err := startErr(t,
					fx.Provide(yamlProvider(tt.give)),
					fx.Provide(yarpcConfig, dispatcherFromConfig),
					app.opt,
					fx.Invoke(func(*yarpc.Dispatcher) {}),
				)
				require.Error(t, err)
				msg := err.Error()
				i := strings.Index(msg, tt.want)
				require.GreaterOrEqual(t, i, 0, "errown's words in %q", msg)
				prefix := msg[:i]
				t.Logf("%d characters before errown's words: %q", len(prefix), prefix)
				assert.True(t, strings.HasPrefix(msg, "errown: config: "), "leads with errown: %q", msg)
				assert.LessOrEqual(t, len(prefix)-len("errown: config: "), _maxErrorPrefix, "fx's words before errown's: %q", prefix)
			})
		}
	}
}
