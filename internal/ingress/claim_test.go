package ingress

import (
	"fmt"
	"testing"

	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
)

func TestDecideTable(t *testing.T) {
	closeRCS := Failure{Kind: ownership.KindFailClose, RCS: true}
	closeNoRCS := Failure{Kind: ownership.KindFailClose, RCS: false}
	openRCS := Failure{Kind: ownership.KindFailOpen, RCS: true}
	openNoRCS := Failure{Kind: ownership.KindFailOpen, RCS: false}
	unknownRCS := Failure{Kind: ownership.KindUnknown, RCS: true}
	unknownNoRCS := Failure{Kind: ownership.KindUnknown, RCS: false}

	tests := []struct {
		name              string
		give              []Failure
		unknownCorrelated bool
		want              ownership.Claim
	}{
		{"no failure: fault is here", nil, true, ownership.ClaimClaimed},
		{"no failure, unknown coincidental", nil, false, ownership.ClaimClaimed},
		{"only fail-open with RCS", []Failure{openRCS}, true, ownership.ClaimClaimed},
		{"only fail-open without RCS", []Failure{openNoRCS, openRCS}, true, ownership.ClaimClaimed},
		{"fail-close with RCS", []Failure{closeRCS}, true, ownership.ClaimUnclaimed},
		{"fail-close without RCS: at least once", []Failure{closeNoRCS}, true, ownership.ClaimClaimed},
		{"fail-close mixed RCS", []Failure{closeRCS, closeNoRCS}, true, ownership.ClaimClaimed},
		{"fail-close with RCS plus fail-open without", []Failure{closeRCS, openNoRCS}, true, ownership.ClaimUnclaimed},
		{"unknown correlated with RCS", []Failure{unknownRCS}, true, ownership.ClaimUnclaimed},
		{"unknown correlated without RCS", []Failure{unknownNoRCS}, true, ownership.ClaimClaimed},
		{"unknown coincidental with RCS", []Failure{unknownRCS}, false, ownership.ClaimClaimed},
		{"unknown coincidental without RCS", []Failure{unknownNoRCS}, false, ownership.ClaimClaimed},
		{"unknown coincidental beside fail-close with RCS", []Failure{unknownNoRCS, closeRCS}, false, ownership.ClaimUnclaimed},
		{"unknown correlated without RCS beside fail-close with RCS", []Failure{closeRCS, unknownNoRCS}, true, ownership.ClaimClaimed},
		{"fail-open without RCS beside unknown with RCS", []Failure{openNoRCS, unknownRCS}, true, ownership.ClaimUnclaimed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Decide(tt.give, tt.unknownCorrelated))
		})
	}
}

// TestDecideExhaustive checks Decide against docs/DESIGN.md's inbound table, read
// literally, over every list of up to three failures of every kind and RCS.
func TestDecideExhaustive(t *testing.T) {
	var all []Failure
	for _, k := range []ownership.EdgeKind{ownership.KindUnknown, ownership.KindFailClose, ownership.KindFailOpen} {
		for _, rcs := range []bool{false, true} {
			all = append(all, Failure{Kind: k, RCS: rcs})
		}
	}
	var lists [][]Failure
	lists = append(lists, nil)
	for _, a := range all {
		lists = append(lists, []Failure{a})
		for _, b := range all {
			lists = append(lists, []Failure{a, b})
			for _, c := range all {
				lists = append(lists, []Failure{a, b, c})
			}
		}
	}
	spec := func(fs []Failure, unknownCorrelated bool) ownership.Claim {
		var correlated []Failure
		for _, f := range fs {
			if f.Kind == ownership.KindFailClose || (f.Kind == ownership.KindUnknown && unknownCorrelated) {
				correlated = append(correlated, f)
			}
		}
		if len(correlated) == 0 { // F empty, or every failure coincidental
			return ownership.ClaimClaimed
		}
		for _, f := range correlated {
			if !f.RCS {
				return ownership.ClaimClaimed // at-least-once
			}
		}
		return ownership.ClaimUnclaimed
	}
	for _, unknownCorrelated := range []bool{true, false} {
		for _, fs := range lists {
			assert.Equal(t, spec(fs, unknownCorrelated), Decide(fs, unknownCorrelated),
				fmt.Sprintf("failures %+v, unknownCorrelated %v", fs, unknownCorrelated))
		}
	}
	assert.Len(t, lists, 1+6+36+216)
}

func TestCorrelated(t *testing.T) {
	tests := []struct {
		give              ownership.EdgeKind
		unknownCorrelated bool
		want              bool
	}{
		{ownership.KindFailClose, false, true},
		{ownership.KindFailClose, true, true},
		{ownership.KindFailOpen, false, false},
		{ownership.KindFailOpen, true, false},
		{ownership.KindUnknown, false, false},
		{ownership.KindUnknown, true, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Correlated(tt.give, tt.unknownCorrelated), "%v %v", tt.give, tt.unknownCorrelated)
	}
}
