package errown_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/retrypeer"
	"github.com/stretchr/testify/assert"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
	yarpcpeer "go.uber.org/yarpc/peer"
	"go.uber.org/yarpc/peer/hostport"
	"go.uber.org/yarpc/peer/roundrobin"
	yhttp "go.uber.org/yarpc/transport/http"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// testOutbound is an outbound of a test dispatcher: its key, the service
// name it sets ("": none, so the key), whether it is oneway only, and how
// it chooses among its callee's instances: "" one peer, "list" yarpc's
// round robin over three, "retrypeer" the same wrapped by retrypeer.New.
type testOutbound struct {
	key, service string
	oneway       bool
	peers        string
}

// oneIf is 1 when b holds, else 0: how many of a thing a test wants.
func oneIf(b bool) int {
	if b {
		return 1
	}
	return 0
}

func outboundTo(key string) testOutbound { return testOutbound{key: key} }

// yarpcConfigCalling is the yarpc.Config of a service "svc" with outs, all
// over HTTP to a port nothing listens on: the checks read them, no call is
// made.
func yarpcConfigCalling(outs ...testOutbound) yarpc.Config {
	cfg := yarpc.Config{Name: "svc", Outbounds: yarpc.Outbounds{}}
	for _, o := range outs {
		t := yhttp.NewTransport()
		out := t.NewSingleOutbound("http://127.0.0.1:1")
		if o.peers != "" {
			ids := []peer.Identifier{hostport.Identify("127.0.0.1:1"), hostport.Identify("127.0.0.1:2"), hostport.Identify("127.0.0.1:3")}
			var chooser peer.Chooser = yarpcpeer.Bind(roundrobin.New(t), yarpcpeer.BindPeers(ids))
			if o.peers == "retrypeer" {
				chooser = yarpcpeer.Bind(retrypeer.New(roundrobin.New(t)), yarpcpeer.BindPeers(ids))
			}
			out = t.NewOutbound(chooser)
		}
		spec := transport.Outbounds{ServiceName: o.service, Unary: out}
		if o.oneway {
			spec = transport.Outbounds{ServiceName: o.service, Oneway: out}
		}
		cfg.Outbounds[o.key] = spec
	}
	return cfg
}

// TestNothingSilentlyDoesNothing: a configuration that would do nothing,
// in a real fx application with errown.Module and a yarpc dispatcher,
// fails start with its fix, or with wiring: warn starts and logs it.
func TestNothingSilentlyDoesNothing(t *testing.T) {
	const policyFor = "errown:\n  retry:\n    policies:\n      - {service: %s, idempotent: true}\n"
	policy := func(service string) string { return strings.Replace(policyFor, "%s", service, 1) }
	users := []testOutbound{outboundTo("users"), outboundTo("billing")}
	tests := []struct {
		name      string
		give      string // the application's whole YAML
		outbounds []testOutbound
		wantErr   string // the error naming the fix; "": start succeeds
		wantIs    error  // nil: no sentinel to match
		wantWarn  string // the warning logged; "": none
	}{
		// A top-level key close to errown, and no errown key.
		{
			name:    "errown transposed",
			give:    "errwon:\n  retry:\n    policies:\n      - {service: users, idempotent: true}\n",
			wantErr: `found top-level key "errwon", did you mean errown? errown reads only "errown" and would start with defaults and no retry policies: rename "errwon" to errown`,
		},
		{name: "errown capitalised", give: "Errown:\n  mode: observe\n", wantErr: `found top-level key "Errown", did you mean errown?`},
		{name: "errown with an underscore", give: "err_own:\n  mode: observe\n", wantErr: `found top-level key "err_own", did you mean errown?`},
		{name: "errown with a trailing underscore", give: "errown_:\n  mode: observe\n", wantErr: `rename "errown_" to errown (or, if it is not errown's, add errown: {} beside it)`},
		{name: "an application key two edits away is not errown's", give: "errors:\n  verbose: true\n"},
		{name: "a near key beside the errown key", give: "errown: {}\nErrown:\n  theirs: true\n"},

		// A retry policy or a declaration naming a service that is no
		// outbound of the dispatcher.
		{name: "a policy for an outbound", give: policy("users"), outbounds: users},
		{
			name:      "a policy for a misspelled service",
			give:      policy("usres"),
			outbounds: users,
			wantErr:   `retry.policies[0].service: "usres" is not called by the dispatcher "svc", which calls "billing", "users": write service: users`,
			wantIs:    errown.ErrUnknownService,
		},
		{
			name:      "a policy for a service nobody calls",
			give:      policy("payments"),
			outbounds: users,
			wantErr:   `retry.policies[0].service: "payments" is not called by the dispatcher "svc", which calls "billing", "users": name one of those`,
			wantIs:    errown.ErrUnknownService,
		},
		{
			name:      "a policy naming the outbound key, not the service it calls",
			give:      policy("users"),
			outbounds: []testOutbound{{key: "users", service: "users-v2"}},
			wantErr:   `retry.policies[0].service: "users" is the key of an outbound whose requests go to service "users-v2": write service: users-v2`,
			wantIs:    errown.ErrUnknownService,
		},
		{name: "a policy naming the service an outbound calls", give: policy("users-v2"), outbounds: []testOutbound{{key: "users", service: "users-v2"}}},
		{
			name:      "a policy for a oneway outbound",
			give:      policy("events"),
			outbounds: []testOutbound{{key: "events", oneway: true}},
			wantErr:   `"events" has only oneway or stream outbounds, and errown sees unary calls only: remove it`,
			wantIs:    errown.ErrUnknownService,
		},
		{
			name:    "a policy on a dispatcher with no outbound",
			give:    policy("users"),
			wantErr: `retry.policies[0].service: "users" is not called: the dispatcher "svc" has no unary outbound: remove it; set errown.wiring: warn to start anyway`,
			wantIs:  errown.ErrUnknownService,
		},
		{
			name:      "a declaration for a service nobody calls",
			give:      "errown:\n  dependencies:\n    - {service: users, kind: fail-close}\n    - {service: cache, kind: fail-open}\n",
			outbounds: users,
			wantErr:   `dependencies[1].service: "cache" is not called by the dispatcher "svc", which calls "billing", "users": name one of those, or, for a dependency the handlers report with outbound.Record, set recorded: true`,
			wantIs:    errown.ErrUnknownService,
		},
		{
			name:      "a declaration of a dependency the handlers record",
			give:      "errown:\n  dependencies:\n    - {service: cache, kind: fail-open, recorded: true}\n",
			outbounds: users,
		},
		{
			name:      "every unknown service at once",
			give:      "errown:\n  retry:\n    policies:\n      - {service: usres, idempotent: true}\n  dependencies:\n    - {service: biling, kind: fail-close}\n",
			outbounds: users,
			wantErr:   `retry.policies[0].service: "usres" is not called by the dispatcher "svc", which calls "billing", "users": write service: users; dependencies[0].service: "biling" is not called`,
			wantIs:    errown.ErrUnknownService,
		},

		// A policy's retries through a peer list that cannot send them to
		// another instance.
		{
			name:      "a policy over a bare round robin",
			give:      policy("users"),
			outbounds: []testOutbound{{key: "users", peers: "list"}, outboundTo("billing")},
			wantErr:   `outbound "users" (service "users") chooses through *roundrobin.List: wrap its chooser in retrypeer.New`,
			wantIs:    errown.ErrRetriesNotSteered,
		},
		{
			name:      "a policy over a renamed outbound's bare list",
			give:      policy("users-v2"),
			outbounds: []testOutbound{{key: "users", service: "users-v2", peers: "list"}},
			wantErr:   `outbound "users" (service "users-v2") chooses through *roundrobin.List`,
			wantIs:    errown.ErrRetriesNotSteered,
		},
		{name: "a policy over a list retrypeer wraps", give: policy("users"), outbounds: []testOutbound{{key: "users", peers: "retrypeer"}}},
		{name: "a bare list no policy retries", give: policy("billing"), outbounds: []testOutbound{{key: "users", peers: "list"}, outboundTo("billing")}},
		{
			name:      "a bare list under a policy that never retries",
			give:      "errown:\n  retry:\n    policies:\n      - {service: users, idempotent: true, maxAttempts: 1}\n",
			outbounds: []testOutbound{{key: "users", peers: "list"}},
		},
		{
			name:      "wiring: warn, a policy over a bare list",
			give:      "errown:\n  wiring: warn\n  retry:\n    policies:\n      - {service: users, idempotent: true}\n",
			outbounds: []testOutbound{{key: "users", peers: "list"}},
			wantWarn:  `or, for outbounds in yarpc's YAML, call retrypeer.RegisterPeerLists on the yarpcconfig.Configurator; set errown.wiring: warn to start anyway`,
		},

		// An explicit zero that would mean a default.
		{
			name:    "minPerSecond: 0",
			give:    "errown:\n  retry:\n    budget:\n      minPerSecond: 0\n",
			wantErr: "retry.budget.minPerSecond: 0 would mean the default 10; to disable the floor write noFloor: true",
		},
		{name: "minPerSecond: 0 beside noFloor: true", give: "errown:\n  retry:\n    budget:\n      minPerSecond: 0\n      noFloor: true\n"},
		{
			name:    "ratio: 0",
			give:    "errown:\n  retry:\n    budget:\n      ratio: 0\n",
			wantErr: "retry.budget.ratio: 0 would mean the default 0.1; for a budget that is nearly all floor write a tiny ratio such as 0.0001",
		},
		{
			name:      "maxAttempts: 0",
			give:      "errown:\n  retry:\n    policies:\n      - {service: users, idempotent: true, maxAttempts: 0}\n",
			outbounds: users,
			wantErr:   "retry.policies[0].maxAttempts: 0 would mean the default 2; for no retries write maxAttempts: 1",
		},
		{
			name:    "an empty header name",
			give:    "errown:\n  claimHeader: \"\"\n",
			wantErr: `claimHeader: "" would mean the default "errown-claim"`,
		},
		{name: "attemptTimeout: 0s, no per-attempt limit as written", give: "errown:\n  retry:\n    policies:\n      - {service: users, idempotent: true, attemptTimeout: 0s}\n", outbounds: users},

		// wiring: warn starts, and says what does nothing.
		{
			name:      "wiring: warn, a policy for a misspelled service",
			give:      "errown:\n  wiring: warn\n  retry:\n    policies:\n      - {service: usres, idempotent: true}\n",
			outbounds: users,
			wantWarn:  `retry.policies[0].service: "usres" is not called by the dispatcher "svc", which calls "billing", "users": write service: users`,
		},
		{
			name:      "wiring: warn, a declaration for a service nobody calls",
			give:      "errown:\n  wiring: warn\n  dependencies:\n    - {service: cache, kind: fail-open}\n",
			outbounds: users,
			wantWarn:  "or, for a dependency the handlers report with outbound.Record, set recorded: true",
		},
		{
			// A value errown cannot take as written is invalid, as any
			// other: wiring: warn is about what the configuration reaches.
			name:    "wiring: warn does not take an explicit zero",
			give:    "errown:\n  wiring: warn\n  retry:\n    budget:\n      minPerSecond: 0\n",
			wantErr: "to disable the floor write noFloor: true",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			err := startErr(t,
				fx.Provide(yamlProvider(tt.give)),
				fx.Supply(zap.New(core)),
				fx.Provide(func() yarpc.Config { return yarpcConfigCalling(tt.outbounds...) }, dispatcherFromConfig),
				errown.Module,
				fx.Invoke(func(*yarpc.Dispatcher) {}),
			)
			started := logs.FilterMessage("errown started").All()
			warned := logs.FilterLevelExact(zapcore.WarnLevel).All()
			warnings := make([]string, len(warned))
			for i, w := range warned {
				warnings[i] = w.Message + ": " + fmt.Sprint(w.ContextMap()["error"])
			}

			assert.Equal(t, tt.wantErr == "", err == nil, "start succeeds: %v", err)
			assert.Contains(t, fmt.Sprint(err), tt.wantErr, "the error names the fix")
			assert.True(t, tt.wantIs == nil || errors.Is(err, tt.wantIs), "errors.Is(%v, %v)", err, tt.wantIs)
			assert.Len(t, started, oneIf(err == nil), "one start line, when it starts")
			assert.Len(t, warnings, oneIf(tt.wantWarn != ""), "one warning, when one is wanted: %v", warnings)
			assert.Contains(t, strings.Join(warnings, "\n"), tt.wantWarn)
		})
	}
}
