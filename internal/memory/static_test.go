package memory

import (
	"testing"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fixed ownership.EdgeKind

func (f fixed) Kind(ownership.Edge) ownership.EdgeKind { return ownership.EdgeKind(f) }

func TestStaticMostSpecificWins(t *testing.T) {
	s, err := NewStatic([]depmem.Declaration{
		{Service: "cache", Kind: new(ownership.KindFailOpen)},
		{CallerProcedure: "checkout", Service: "cache", Kind: new(ownership.KindFailClose)},
		{Service: "cache", Procedure: "warm", Kind: new(ownership.KindUnknown)},
		{CallerProcedure: "checkout", Service: "cache", Procedure: "warm", Kind: new(ownership.KindFailOpen)},
		{CallerProcedure: "*", Service: "users", Procedure: "*", Kind: new(ownership.KindFailClose)},
	}, fixed(ownership.KindFailOpen))
	require.NoError(t, err)
	tests := []struct {
		give ownership.Edge
		want ownership.EdgeKind
	}{
		{ownership.Edge{CallerProcedure: "checkout", Service: "cache", Procedure: "warm"}, ownership.KindFailOpen},
		{ownership.Edge{CallerProcedure: "other", Service: "cache", Procedure: "warm"}, ownership.KindUnknown},
		{ownership.Edge{CallerProcedure: "checkout", Service: "cache", Procedure: "get"}, ownership.KindFailClose},
		{ownership.Edge{CallerProcedure: "other", Service: "cache", Procedure: "get"}, ownership.KindFailOpen},
		{ownership.Edge{CallerProcedure: "any", Service: "users", Procedure: "get"}, ownership.KindFailClose},
		{ownership.Edge{CallerProcedure: "any", Service: "ledger", Procedure: "get"}, ownership.KindFailOpen}, // from next
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, s.Kind(tt.give), "%v", tt.give)
	}
}

func TestStaticDefaultsToUnknown(t *testing.T) {
	s, err := NewStatic(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, ownership.KindUnknown, s.Kind(ownership.Edge{Service: "x"}))
}

func TestStaticErrorsNameEveryKey(t *testing.T) {
	_, err := NewStatic([]depmem.Declaration{
		{Service: "ok", Kind: new(ownership.KindFailOpen)},
		{Service: "", Kind: new(ownership.KindFailOpen)},
		{Service: "x", Kind: new(ownership.EdgeKind(7))},
		{Service: "*", Kind: new(ownership.KindFailClose)},
		{Service: "ok", Procedure: "*", Kind: new(ownership.KindFailClose)},
		{Service: "y"},
		{Service: "z", Kind: new(ownership.KindUnknown)},
	}, nil)
	assert.Equal(t, []string{
		`dependencies[1].service: a callee service is required, got ""`,
		`dependencies[2].kind: unknown edge kind 7 (want fail-close, fail-open or unknown)`,
		`dependencies[3].service: a callee service is required, got "*"`,
		`dependencies[4]: edge *->ok::* declared twice`,
		`dependencies[5].kind: must be set: fail-close, fail-open or unknown`,
	}, errorStrings(err))
}

// TestStaticDeclaredUnknown: a declared unknown is a declaration: it hides
// what the next Classifier learned.
func TestStaticDeclaredUnknown(t *testing.T) {
	s, err := NewStatic([]depmem.Declaration{{Service: "cache", Kind: new(ownership.KindUnknown)}}, fixed(ownership.KindFailClose))
	require.NoError(t, err)
	assert.Equal(t, ownership.KindUnknown, s.Kind(ownership.Edge{CallerProcedure: "a", Service: "cache", Procedure: "get"}))
	assert.Equal(t, ownership.KindFailClose, s.Kind(ownership.Edge{CallerProcedure: "a", Service: "db", Procedure: "get"}))
}
