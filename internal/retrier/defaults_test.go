package retrier

import (
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/retry"
)

// withDefaults is cfg as New runs it: every field left zero filled from
// retry.DefaultConfig, each policy's from retry.DefaultPolicyConfig.
func withDefaults(cfg retry.Config) retry.Config {
	return defaults.Fill(cfg, retry.DefaultConfig(), retry.DefaultPolicyConfig())
}
