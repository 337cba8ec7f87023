package ingress

import "github.com/errown/errown/ownership"

// Failure is one failed outbound call of a request, as Decide needs it.
type Failure struct {
	// Kind of the edge the call went over.
	Kind ownership.EdgeKind
	// RCS reports whether the call's retry criteria were satisfied: a
	// retry was attempted, the error was unclaimed, a retry was refused
	// (budget, deadline, pushback), or it is not retryable by nature.
	RCS bool
}

// Correlated reports whether a failure on an edge of kind k may explain the
// caller's own error. Fail-close edges always do, fail-open edges never do,
// and unknown edges do when unknownCorrelated is set.
func Correlated(k ownership.EdgeKind, unknownCorrelated bool) bool {
	switch k {
	case ownership.KindFailClose:
		return true
	case ownership.KindFailOpen:
		return false
	default:
		return unknownCorrelated
	}
}

// Decide returns the claim for an error a handler returned, given the
// request's failed outbound calls:
//
//   - no failed call: the fault is here, claimed;
//   - only failures on fail-open edges (coincidental): claimed;
//   - a correlated failure whose retry criteria are not satisfied: claimed,
//     so that the caller retries (at least once);
//   - correlated failures, all with their retry criteria satisfied:
//     unclaimed.
//
// Decide never returns ClaimMissing.
func Decide(failures []Failure, unknownCorrelated bool) ownership.Claim {
	correlated := false
	for _, f := range failures {
		if !Correlated(f.Kind, unknownCorrelated) {
			continue
		}
		if !f.RCS {
			return ownership.ClaimClaimed
		}
		correlated = true
	}
	if correlated {
		return ownership.ClaimUnclaimed
	}
	return ownership.ClaimClaimed
}
