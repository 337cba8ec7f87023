package depmem

import (
	"testing"

	"github.com/errown/errown/egresslog"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fixed ownership.EdgeKind

func (f fixed) Kind(egresslog.Edge) ownership.EdgeKind { return ownership.EdgeKind(f) }

func TestStaticMostSpecificWins(t *testing.T) {
	s, err := NewStatic([]Declaration{
		{Service: "cache", Kind: "fail-open"},
		{CallerProcedure: "checkout", Service: "cache", Kind: "fail-close"},
		{Service: "cache", Procedure: "warm", Kind: "unknown"},
		{CallerProcedure: "checkout", Service: "cache", Procedure: "warm", Kind: "fail-open"},
		{CallerProcedure: "*", Service: "users", Procedure: "*", Kind: "fail-close"},
	}, fixed(ownership.KindFailOpen))
	require.NoError(t, err)
	tests := []struct {
		give egresslog.Edge
		want ownership.EdgeKind
	}{
		{egresslog.Edge{CallerProcedure: "checkout", Service: "cache", Procedure: "warm"}, ownership.KindFailOpen},
		{egresslog.Edge{CallerProcedure: "other", Service: "cache", Procedure: "warm"}, ownership.KindUnknown},
		{egresslog.Edge{CallerProcedure: "checkout", Service: "cache", Procedure: "get"}, ownership.KindFailClose},
		{egresslog.Edge{CallerProcedure: "other", Service: "cache", Procedure: "get"}, ownership.KindFailOpen},
		{egresslog.Edge{CallerProcedure: "any", Service: "users", Procedure: "get"}, ownership.KindFailClose},
		{egresslog.Edge{CallerProcedure: "any", Service: "ledger", Procedure: "get"}, ownership.KindFailOpen}, // from next
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, s.Kind(tt.give), "%v", tt.give)
	}
}

func TestStaticDefaultsToUnknown(t *testing.T) {
	s, err := NewStatic(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, ownership.KindUnknown, s.Kind(egresslog.Edge{Service: "x"}))
}

func TestStaticErrorsNameEveryKey(t *testing.T) {
	_, err := NewStatic([]Declaration{
		{Service: "ok", Kind: "fail-open"},
		{Service: "", Kind: "fail-open"},
		{Service: "x", Kind: "hard"},
		{Service: "*", Kind: "fail-close"},
		{Service: "ok", Procedure: "*", Kind: "fail-close"},
	}, nil)
	require.Error(t, err)
	for _, want := range []string{
		`dependencies[1].service: a callee service is required, got ""`,
		`dependencies[2].kind: unknown edge kind "hard"`,
		`dependencies[3].service: a callee service is required, got "*"`,
		`dependencies[4]: edge *->ok::* declared twice`,
	} {
		assert.ErrorContains(t, err, want)
	}
}
