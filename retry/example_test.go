package retry_test

import (
	"fmt"

	"github.com/errown/errown/retry"
	"go.uber.org/multierr"
)

func ExampleConfig_Validate() {
	cfg := retry.Config{
		Budget: retry.BudgetConfig{Ratio: -1},
		Policies: []retry.PolicyConfig{
			{Service: "users", Idempotent: new(true)},
			{Service: "users", MaxAttempts: 20, RetryableCodes: []string{"unavailable", "flaky"}, Idempotent: new(true)},
		},
	}

	for _, err := range multierr.Errors(cfg.Validate()) {
		fmt.Println(err)
	}
	// Output:
	// budget.ratio: must be between 0 and 1000, got -1
	// policies[1].maxAttempts: must be between 1 and 10, got 20
	// policies[1].retryableCodes[1]: unknown yarpc code, got "flaky"
	// policies[1]: duplicate of policies[0] for service "users", procedure ""
}

func ExampleBudgetConfig() {
	// A 10% budget with no per-second floor, as stormsim models it.
	cfg := retry.BudgetConfig{Ratio: 0.1, NoFloor: true}

	fmt.Println(retry.Config{Budget: cfg}.Validate())
	// Output:
	// <nil>
}
