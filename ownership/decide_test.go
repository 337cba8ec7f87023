package ownership

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecideTable(t *testing.T) {
	closeRCS := Failure{Kind: KindFailClose, RCS: true}
	closeNoRCS := Failure{Kind: KindFailClose, RCS: false}
	openRCS := Failure{Kind: KindFailOpen, RCS: true}
	openNoRCS := Failure{Kind: KindFailOpen, RCS: false}
	unknownRCS := Failure{Kind: KindUnknown, RCS: true}
	unknownNoRCS := Failure{Kind: KindUnknown, RCS: false}

	tests := []struct {
		name              string
		give              []Failure
		unknownCorrelated bool
		want              Claim
	}{
		{"no failure: fault is here", nil, true, ClaimClaimed},
		{"no failure, unknown coincidental", nil, false, ClaimClaimed},
		{"only fail-open with RCS", []Failure{openRCS}, true, ClaimClaimed},
		{"only fail-open without RCS", []Failure{openNoRCS, openRCS}, true, ClaimClaimed},
		{"fail-close with RCS", []Failure{closeRCS}, true, ClaimUnclaimed},
		{"fail-close without RCS: at least once", []Failure{closeNoRCS}, true, ClaimClaimed},
		{"fail-close mixed RCS", []Failure{closeRCS, closeNoRCS}, true, ClaimClaimed},
		{"fail-close with RCS plus fail-open without", []Failure{closeRCS, openNoRCS}, true, ClaimUnclaimed},
		{"unknown correlated with RCS", []Failure{unknownRCS}, true, ClaimUnclaimed},
		{"unknown correlated without RCS", []Failure{unknownNoRCS}, true, ClaimClaimed},
		{"unknown coincidental with RCS", []Failure{unknownRCS}, false, ClaimClaimed},
		{"unknown coincidental without RCS", []Failure{unknownNoRCS}, false, ClaimClaimed},
		{"unknown coincidental beside fail-close with RCS", []Failure{unknownNoRCS, closeRCS}, false, ClaimUnclaimed},
		{"unknown correlated without RCS beside fail-close with RCS", []Failure{closeRCS, unknownNoRCS}, true, ClaimClaimed},
		{"fail-open without RCS beside unknown with RCS", []Failure{openNoRCS, unknownRCS}, true, ClaimUnclaimed},
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
	for _, k := range []EdgeKind{KindUnknown, KindFailClose, KindFailOpen} {
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
	spec := func(fs []Failure, unknownCorrelated bool) Claim {
		var correlated []Failure
		for _, f := range fs {
			if f.Kind == KindFailClose || (f.Kind == KindUnknown && unknownCorrelated) {
				correlated = append(correlated, f)
			}
		}
		if len(correlated) == 0 { // F empty, or every failure coincidental
			return ClaimClaimed
		}
		for _, f := range correlated {
			if !f.RCS {
				return ClaimClaimed // at-least-once
			}
		}
		return ClaimUnclaimed
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
		give              EdgeKind
		unknownCorrelated bool
		want              bool
	}{
		{KindFailClose, false, true},
		{KindFailClose, true, true},
		{KindFailOpen, false, false},
		{KindFailOpen, true, false},
		{KindUnknown, false, false},
		{KindUnknown, true, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Correlated(tt.give, tt.unknownCorrelated), "%v %v", tt.give, tt.unknownCorrelated)
	}
}
