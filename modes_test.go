package errown

import (
	"testing"

	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
)

func TestModesOf(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		give retry.Config
		want retry.Modes
	}{
		{
			name: "unset: enforce, no overrides",
			give: retry.Config{},
			want: retry.Modes{Mode: retry.ModeEnforce, Overrides: []retry.ModeOverride{}},
		},
		{
			name: "a policy that says the top-level mode again overrides nothing",
			give: retry.Config{Mode: retry.ModeObserve, Policies: []retry.PolicyConfig{
				{Service: "users", Mode: retry.ModeObserve, Idempotent: &yes},
				{Service: "orders", Procedure: "place", Mode: retry.ModeEnforce, Idempotent: &yes},
				{Service: "billing", Idempotent: &yes},
			}},
			want: retry.Modes{Mode: retry.ModeObserve, Overrides: []retry.ModeOverride{{Service: "orders", Procedure: "place", Mode: retry.ModeEnforce}}},
		},
		{
			name: "overrides of enforce, in the configuration's order",
			give: retry.Config{Policies: []retry.PolicyConfig{
				{Service: "users", Procedure: "get", Mode: retry.ModeObserve, Idempotent: &yes},
				{Service: "billing", Mode: retry.ModeObserve, Idempotent: &yes},
			}},
			want: retry.Modes{Mode: retry.ModeEnforce, Overrides: []retry.ModeOverride{
				{Service: "users", Procedure: "get", Mode: retry.ModeObserve},
				{Service: "billing", Mode: retry.ModeObserve},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, modesOf(tt.give))
		})
	}
}
