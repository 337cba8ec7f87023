package errown_test

import (
	"fmt"
	"strings"

	"github.com/errown/errown"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
)

// Add errown.Module to an fx application that provides a yarpc.Config: the
// config comes back with errown's middleware on it.
func ExampleModule() {
	yamlConfig := `
errown:
  retry:
    policies:
      - service: payments
        maxAttempts: 2
        idempotent: true
`
	var cfg yarpc.Config
	app := fx.New(
		fx.NopLogger,
		fx.Provide(func() (config.Provider, error) {
			return config.NewYAML(config.Source(strings.NewReader(yamlConfig)))
		}),
		fx.Provide(func() yarpc.Config { return yarpc.Config{Name: "checkout"} }),
		errown.Module,
		fx.Populate(&cfg),
	)
	fmt.Println(app.Err() == nil, cfg.InboundMiddleware.Unary != nil, cfg.OutboundMiddleware.Unary != nil)
	// Output: true true true
}

// Build the middleware by hand for a dispatcher built without fx.
func ExampleNew() {
	mw, err := errown.New(errown.Config{})
	if err != nil {
		panic(err)
	}
	if err := mw.Start(); err != nil {
		panic(err)
	}
	defer mw.Stop()
	d := yarpc.NewDispatcher(mw.Apply(yarpc.Config{Name: "checkout"}))
	fmt.Println(d.Name())
	// Output: checkout
}

// Configuration errors name the key and the value.
func ExampleConfigFromYAML() {
	_, err := errown.ConfigFromYAML([]byte("ingress:\n  shards: 3\nretry:\n  budget:\n    window: forever\n"))
	fmt.Println(err)
	// Output: errown: config: retry.budget.window: want a duration such as 10s, got string "forever"
}
