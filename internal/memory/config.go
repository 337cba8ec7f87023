package memory

import (
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/defaults"
)

// ThresholdsOf returns the thresholds cfg classifies edges with, defaults
// applied, for Classify.
func ThresholdsOf(cfg depmem.Config) Thresholds {
	cfg = defaults.Fill(cfg, depmem.DefaultConfig())
	return Thresholds{
		Close:      cfg.CloseThreshold,
		Open:       cfg.OpenThreshold,
		Hysteresis: cfg.Hysteresis,
		MinSamples: int64(cfg.MinSamples),
	}
}
