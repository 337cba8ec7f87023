package bench

import (
	"testing"
	"time"
)

// cpuMeter reports, beside ns/op, the CPU time the whole process used per
// op (cpu-ns/op: GC and every goroutine included). On a shared machine it
// varies less than wall time, which also counts waiting for a core.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
}

// startCPU resets b's timer and starts measuring CPU time.
func startCPU(b *testing.B) *cpuMeter {
	b.ResetTimer()
	return &cpuMeter{b: b, start: cpuTime()}
}

// stop reports cpu-ns/op.
func (m *cpuMeter) stop() {
	used := cpuTime() - m.start
	m.b.StopTimer()
	if m.b.N > 0 {
		m.b.ReportMetric(float64(used)/float64(m.b.N), "cpu-ns/op")
	}
}
