package retry

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestModes(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		give Config
		want Modes
	}{
		{
			name: "unset: enforce, no overrides",
			give: Config{},
			want: Modes{Mode: ModeEnforce, Overrides: []ModeOverride{}},
		},
		{
			name: "a policy that says the top-level mode again overrides nothing",
			give: Config{Mode: ModeObserve, Policies: []PolicyConfig{
				{Service: "users", Mode: ModeObserve, Idempotent: &yes},
				{Service: "orders", Procedure: "place", Mode: ModeEnforce, Idempotent: &yes},
				{Service: "billing", Idempotent: &yes},
			}},
			want: Modes{Mode: ModeObserve, Overrides: []ModeOverride{{Service: "orders", Procedure: "place", Mode: ModeEnforce}}},
		},
		{
			name: "overrides of enforce, in the configuration's order",
			give: Config{Policies: []PolicyConfig{
				{Service: "users", Procedure: "get", Mode: ModeObserve, Idempotent: &yes},
				{Service: "billing", Mode: ModeObserve, Idempotent: &yes},
			}},
			want: Modes{Mode: ModeEnforce, Overrides: []ModeOverride{
				{Service: "users", Procedure: "get", Mode: ModeObserve},
				{Service: "billing", Mode: ModeObserve},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.give.Modes())
		})
	}
}

func TestModeOverrideString(t *testing.T) {
	assert.Equal(t, "users::get=observe", ModeOverride{Service: "users", Procedure: "get", Mode: ModeObserve}.String())
	assert.Equal(t, "billing=enforce", ModeOverride{Service: "billing", Mode: ModeEnforce}.String())
}
