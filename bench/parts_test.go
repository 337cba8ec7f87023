package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"go.uber.org/yarpc/api/middleware"
)

// BenchmarkUnaryParts is UnaryOverheadPaired's chain with errown's parts
// turned on one at a time, in one process taking turns as there: bare;
// floor (the one context node errown allocates per request); errown with
// no retry policy and admission disabled (ownership alone); with
// admission (its default, enforce); with a retry policy and admission
// disabled; and with both (UnaryOverhead's errown). It reports each
// chain's extra ns per request over bare, the median over the ops of
// each op's own figure, so what one part costs is the difference of two.
// Run it with -benchtime Nx, N of 20 or more.
func BenchmarkUnaryParts(b *testing.B) {
	withPolicy := benchConfig(_callee)
	configs := []struct {
		name   string
		cfg    errown.Config
		admits bool
	}{
		{"ownership", errown.Config{}, false},
		{"admission", errown.Config{}, true},
		{"policy", withPolicy, false},
		{"policy+admission", withPolicy, true},
	}
	chains := []pairedChain{
		{h: unaryChain(b, nil, memOutbound{})},
		{h: middleware.ApplyUnaryInbound(callingHandler{out: memOutbound{}}, floorMiddleware{})},
	}
	names := []string{"floor"} // of chains[1:]
	for _, c := range configs {
		cfg := c.cfg
		if !c.admits {
			cfg.Admission.Mode = inbound.AdmissionDisabled
		}
		chains = append(chains, pairedChain{h: unaryChain(b, &cfg, memOutbound{})})
		names = append(names, c.name)
	}
	p := runPaired(b, chains)
	b.ReportMetric(p.nsPerReq(0), "bare-ns/req")
	for i, name := range names {
		k := i + 1
		b.ReportMetric(p.medianOf(func(op []time.Duration) float64 {
			return float64((op[k] - op[0]).Nanoseconds()) / float64(2*_pairedRound)
		}), fmt.Sprintf("%s-extra-ns/req", name))
	}
}
