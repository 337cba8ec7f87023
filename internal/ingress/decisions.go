package ingress

import (
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// _decisionPeerCalls is how many failed calls' peers a decision lists.
const _decisionPeerCalls = 4

// _recentDecisions is how many claim decisions are remembered.
const _recentDecisions = _ringSize

// record is a Decision as the request path keeps it; names are looked up
// when listed.
type record struct {
	time        time.Time
	procedure   string
	reason      string
	failedCalls int
	code        yarpcerrors.Code
	class       wire.Class
	claim       ownership.Claim
	refused     wire.Refusal        // of a ReasonRefusedHere
	peers       []inbound.CallPeers // nil unless a peer chooser recorded them (decisionPeers)
}

func (r *record) decision() inbound.Decision {
	return inbound.Decision{
		Time:        r.time,
		Procedure:   r.procedure,
		Code:        codeName(r.code, r.class),
		Claim:       r.claim.String(),
		FailedCalls: r.failedCalls,
		Reason:      r.reason,
		RefusedBy:   r.refusedBy(),
		Peers:       r.peers,
	}
}

// decisionPeers returns the recorded peers (calls.Entry.Route) of up to
// _decisionPeerCalls failed calls, or nil, allocating nothing, when none
// has any.
func decisionPeers(entries []calls.Entry) []inbound.CallPeers {
	var out []inbound.CallPeers
	for _, e := range entries {
		if !e.Failed() || e.Route == nil {
			continue
		}
		if len(out) == _decisionPeerCalls {
			break
		}
		out = append(out, inbound.CallPeers{
			Service:   e.Edge.Service,
			Procedure: e.Edge.Procedure,
			Peers:     e.Route.Peers(nil),
		})
	}
	return out
}

// refusedBy names the refusal of a ReasonRefusedHere, else "".
func (r *record) refusedBy() string {
	if r.refused == wire.RefusedNone {
		return ""
	}
	return r.refused.String()
}

// decisions is a ring of the latest decisions, written only by error
// responses. Padding its places gains nothing (BenchmarkDecisionsRing).
type decisions struct {
	r ring[record]
}

// add keeps r (ph: procedureHash) unless it repeats the newest decision
// at the same time.
func (d *decisions) add(r record, ph uint64) {
	d.r.addNew(r, signature(ph, signatureWords{
		uint64(r.time.UnixNano()),
		uint64(r.failedCalls),
		uint64(r.code)<<16 | uint64(r.class)<<8 | uint64(r.claim),
		reasonWord(r.reason) | uint64(r.refused)<<8,
	}))
}

// reasonWord returns a signature word for a Reason constant; comparing
// strings is as fast as reading the address (BenchmarkDecisionSignature).
func reasonWord(reason string) uint64 {
	switch reason {
	case ReasonOwnFailure:
		return 1
	case ReasonCoincidental:
		return 2
	case ReasonAtLeastOnce:
		return 3
	case ReasonRetriedBelow:
		return 4
	case ReasonRetriedHere:
		return 5
	case ReasonRefusedHere:
		return 6
	case ReasonNotRetryable:
		return 7
	}
	return 0
}

// list returns the decisions held, newest first.
func (d *decisions) list() []inbound.Decision {
	out := make([]inbound.Decision, 0, d.r.held())
	d.r.each(func(r record) { out = append(out, r.decision()) })
	return out
}
