package depmem

// Thresholds decide an edge's kind from its counts. See Classify.
type Thresholds struct {
	// Close: a ratio at or above it is fail-close.
	Close float64
	// Open: a ratio at or below it is fail-open.
	Open float64
	// Hysteresis keeps a classified edge in its kind until the ratio has
	// moved this far past the threshold it crossed.
	Hysteresis float64
	// MinSamples is the least number of callee failures in the window
	// before an edge is classified at all.
	MinSamples int64
}
