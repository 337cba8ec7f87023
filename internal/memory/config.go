package memory

import (
	"github.com/errown/errown/depmem"
)

// ThresholdsOf returns the thresholds cfg classifies edges with, defaults
// applied, for Classify.
func ThresholdsOf(cfg depmem.Config) Thresholds {
	cfg = cfg.WithDefaults()
	return Thresholds{
		Close:      cfg.CloseThreshold,
		Open:       cfg.OpenThreshold,
		Hysteresis: cfg.Hysteresis,
		MinSamples: int64(cfg.MinSamples),
	}
}
