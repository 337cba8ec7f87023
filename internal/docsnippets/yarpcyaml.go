package docsnippets

// README.md, "Several instances of a callee": outbounds in yarpc's YAML.

import (
	"github.com/errown/errown/retrypeer"
	"go.uber.org/config"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcconfig"
)

func newYARPCConfig(y *config.YAML) (yarpc.Config, error) {
	c := yarpcconfig.New()
	c.MustRegisterTransport(http.TransportSpec())
	retrypeer.RegisterPeerLists(c) // errown's retries go to another instance
	var raw map[string]any
	if err := y.Get("yarpc").Populate(&raw); err != nil {
		return yarpc.Config{}, err
	}
	return c.LoadConfig("checkout", raw)
}

var _ = newYARPCConfig
