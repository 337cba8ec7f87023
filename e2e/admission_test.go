package e2e_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/stormsim"
	"github.com/errown/errown/internal/testtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// admissionTopology is the capacity drop the admission test runs:
// dropTopology with C's two workers at 5ms (400 requests/s; 40/s in the
// drop) and 80 root requests/s (the race detector on a loaded machine
// stalled the load at 120/s): half of the root requests can be served
// in time during the drop, and only if C holds no more than its two
// workers can finish within B's 60ms (a request waiting behind both
// misses it). The load runs on for after the drop's end.
func admissionTopology(after time.Duration) *stormsim.Topology {
	return dropTopology("e2e-admission", 80, 5*time.Millisecond, after)
}

// The targets of the admission test, beside the fixed limit run on the
// same seeds: errown's goodput during the drop at least
// _admissionOracleShare of the fixed limit's (less the noise) and
// _admissionBoundShare of the bound (its shortfall scaled on a loaded
// machine), none shed before the drop, and back (at least stormsim.RecoveryGoodput, or what the
// mesh held before the drop less _recoverySlack) within one bin of the
// drop's end, in every seed.
const (
	_admissionBound       = 40.0 / 80
	_admissionBoundShare  = 0.65
	_admissionOracleShare = 0.9
)

// Admission control on real services: under errown with its admission
// enforcing, C (the service that slowed) sheds what it cannot finish in
// its callers' time, so that during the drop the root gets about what a
// fixed limit of C's two workers with no queue would give it (an oracle:
// it knows C's capacity), and is back within a bin of the drop's end.
// The fixed limit is errown too, without admission, in front of a C that
// holds two requests and refuses the rest at once. Both run over the
// same three seeds; the host's stalls are left out of both as the
// recovery test leaves them out (judge).
func TestAdmissionHoldsGoodput(t *testing.T) {
	arms := []struct {
		name    string
		errown  func(*errown.Config)
		noQueue bool
	}{
		{name: "errown", errown: func(c *errown.Config) { c.Admission.Mode = inbound.AdmissionEnforce }},
		{name: "fixed limit", noQueue: true},
	}
	bin := 250 * time.Millisecond
	healthy := 1 - (1-_healthyBefore)*testtime.Factor()
	var during [2]struct{ good, sent int }
	for _, seed := range []uint64{1, 2, 3} {
		for i, arm := range arms {
			res, err := stormsim.Run(context.Background(), stormsim.Options{
				Topology:  admissionTopology(testtime.Scale(bin) + _stallRoom + stormsim.RecoveryHold),
				Policy:    stormsim.PolicyOwnership,
				Errown:    arm.errown,
				NoQueue:   arm.noQueue,
				Attempts:  2,
				Budget:    0.1,
				Seed:      seed,
				Timeout:   time.Second,
				Bin:       bin,
				Transport: stormsim.TransportHTTP,
			})
			require.NoError(t, err)
			tl := res.Timeline
			j := judge(tl)
			before, judgedBefore := j.goodput(0, j.from)
			for b := j.from; b < j.to && b < len(tl.Sent); b++ {
				if !j.excused[b] {
					during[i].good += tl.Good[b]
					during[i].sent += tl.Sent[b]
				}
			}
			d, _ := j.goodput(j.from, j.to)
			t.Logf("seed %d, %s: goodput before %.3f (%d of %d bins judged), during %.3f, after %.3f; goodput per bin %.2f; stalled bins %v; refused %v",
				seed, arm.name, before, judgedBefore, j.from, d, tl.Summary.GoodputAfter, tl.Goodput, j.stalled, tl.Summary.Refused)
			require.GreaterOrEqual(t, 2*judgedBefore, j.from, "the host stalled %d of the %d bins before the drop: too few left to judge", j.from-judgedBefore, j.from)
			if i != 0 {
				continue
			}
			assert.True(t, before >= healthy, "seed %d: goodput before the drop %.3f, want at least %.3f: the mesh was not healthy to begin with", seed, before, healthy)
			level := stormsim.RecoveryGoodput
			if before-_recoverySlack < level {
				level = max(before-_recoverySlack, healthy-_recoverySlack)
			}
			after, stalled, recovered := j.recovery(level)
			if assert.True(t, recovered, "seed %d: back to goodput %.3f for %v (stalled: %v)", seed, level, stormsim.RecoveryHold, j.stalled) {
				assert.LessOrEqual(t, after-stalled, testtime.Scale(bin), "seed %d: recovered %v after the drop's end, %v of it stalled: want within one bin (%v × %v)", seed, after, stalled, bin, testtime.Factor())
			}
			assert.Zero(t, tl.ShedBefore(), "seed %d: requests shed before the drop, in the steady state", seed)
		}
	}
	share := func(i int) float64 {
		if during[i].sent == 0 {
			return math.NaN()
		}
		return float64(during[i].good) / float64(during[i].sent)
	}
	got, oracle := share(0), share(1)
	// Two standard errors of the difference of the two proportions: the
	// noise of the oracle's share.
	noise := 2 * math.Sqrt(got*(1-got)/float64(during[0].sent)+oracle*(1-oracle)/float64(during[1].sent))
	// A loaded machine (the race detector, another process) costs every
	// request time on its hops, so that the fixed limit itself reached
	// only 0.71–0.72 of the bound beside two builds, with the race
	// detector or without: the lab's capacity scenario, on a quiet
	// machine, judges 0.75 of the bound; this test 0.65, its shortfall
	// scaled as the recovery test scales its healthy level.
	boundShare := 1 - (1-_admissionBoundShare)*testtime.Factor()
	t.Logf("goodput during the drop over the seeds: errown %.3f (%d of %d), fixed limit %.3f (%d of %d), noise %.3f; bound %.3f: errown %.2f of it, the fixed limit %.2f",
		got, during[0].good, during[0].sent, oracle, during[1].good, during[1].sent, noise, _admissionBound, got/_admissionBound, oracle/_admissionBound)
	assert.True(t, got >= boundShare*_admissionBound, "errown's goodput during the drop %.3f, want at least %.3f (%.2f of the bound %.3f: %v's shortfall × %v)", got, boundShare*_admissionBound, boundShare, _admissionBound, _admissionBoundShare, testtime.Factor())
	assert.True(t, got >= _admissionOracleShare*oracle-noise, "errown's goodput during the drop %.3f, want at least %.3f (%v of the fixed limit's %.3f, less the noise %.3f)", got, _admissionOracleShare*oracle-noise, _admissionOracleShare, oracle, noise)
}
