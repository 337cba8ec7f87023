package docsnippets

import (
	"github.com/errown/errown"
	"go.uber.org/config"
	"go.uber.org/fx"
)

// docs/configuration.md, "Layered configuration files".

func newConfig(files errown.ConfigFiles) (*config.YAML, error) {
	opts := make([]config.YAMLOption, len(files))
	for i, f := range files {
		opts[i] = config.File(f)
	}
	return config.NewYAML(opts...)
}

var layered = fx.Options(
	fx.Supply(errown.ConfigFiles{"config/base.yaml", "config/production.yaml"}),
	fx.Provide(newConfig),
)

var _ = layered
