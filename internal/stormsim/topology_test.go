package stormsim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/yarpcerrors"
)

func TestParseTopology(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		give string
		want *Topology
	}{
		{
			name: "short and long calls",
			give: `
name: t
description: d
nodes:
  - name: A
    calls: [B, {to: C, times: 2, soft: true}]
  - {name: B, fail: 0.5, failCode: data-loss, errown: false}
  - {name: C, retry: false, dropContext: true}
`,
			want: &Topology{Name: "t", Description: "d", Nodes: []Node{
				{Name: "A", Calls: []Call{{To: "B"}, {To: "C", Times: 2, Soft: true}}},
				{Name: "B", Fail: 0.5, FailCode: "data-loss", Errown: &no},
				{Name: "C", Retry: &no, DropContext: true},
			}},
		},
		{
			name: "a hanging node and per-attempt timeouts",
			give: `
name: slow
nodes:
  - {name: A, calls: [{to: B, attemptTimeout: 400ms}]}
  - {name: B, calls: [{to: C, attemptTimeout: 1.5s, soft: true}]}
  - {name: C, hang: true}
`,
			want: &Topology{Name: "slow", Nodes: []Node{
				{Name: "A", Calls: []Call{{To: "B", AttemptTimeout: 400 * time.Millisecond}}},
				{Name: "B", Calls: []Call{{To: "C", AttemptTimeout: 1500 * time.Millisecond, Soft: true}}},
				{Name: "C", Hang: true},
			}},
		},
		{
			name: "one node",
			give: "name: one\nnodes: [{name: A, fail: 1, errown: true}]",
			want: &Topology{Name: "one", Nodes: []Node{{Name: "A", Fail: 1, Errown: &yes}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTopology([]byte(tt.give))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseTopologyErrors(t *testing.T) {
	tests := []struct {
		name string
		give string
		want []string // substrings of the error
	}{
		{name: "unknown key", give: "name: t\nnodes: [{name: A, colour: red}]", want: []string{"field colour not found"}},
		{name: "unknown call key", give: "name: t\nnodes: [{name: A, calls: [{to: B, often: 2}]}, {name: B}]", want: []string{"field often not found"}},
		{name: "no nodes", give: "name: t", want: []string{`topology "t": nodes: must not be empty`}},
		{
			name: "every node problem at once",
			give: `
name: t
nodes:
  - {name: A, calls: [B, Z, A, B]}
  - {name: b, fail: 1.5, failCode: ok}
  - {name: "C D", failCode: resource-exhausted}
  - {name: E, failCode: sideways, calls: [{to: b, times: 11}]}
  - {name: F, failCode: not-found}
`,
			want: []string{
				`nodes[0] (A).calls[1].to: no node named "Z"`,
				`nodes[0] (A).calls[2].to: a node cannot call itself, got "A"`,
				`nodes[0] (A).calls[3].to: "B" is already called; use times`,
				"nodes[1] (b).fail: must be between 0 and 1, got 1.5",
				`nodes[1] (b).failCode: must be a failure (a server fault), not an answer, got "ok"`,
				`nodes[2].name: must be 1 to 32 letters, digits, '-' or '_', got "C D"`,
				`nodes[2] (C D).failCode: must be unavailable, internal, unknown or data-loss, got "resource-exhausted"`,
				`nodes[3] (E).failCode: unknown yarpc code, got "sideways"`,
				"nodes[3] (E).calls[0].times: must be between 1 and 10, got 11",
				`nodes[4] (F).failCode: must be a failure (a server fault), not an answer, got "not-found"`,
			},
		},
		{
			name: "hang and timeouts",
			give: `
name: t
nodes:
  - {name: A, calls: [{to: B, attemptTimeout: 0.5ms}, {to: C, attemptTimeout: 2h}, {to: D, attemptTimeout: -1ms}]}
  - {name: B, fail: 1, hang: true}
  - {name: C, hang: true, failCode: internal}
  - {name: D, retry: false, calls: [{to: E, attemptTimeout: 10ms}]}
  - {name: E}
`,
			want: []string{
				"nodes[0] (A).calls[0].attemptTimeout: must be between 1ms and 1m0s (a duration such as 40ms), got 500µs",
				"nodes[0] (A).calls[1].attemptTimeout: must be between 1ms and 1m0s (a duration such as 40ms), got 2h0m0s",
				"nodes[0] (A).calls[2].attemptTimeout: must be between 1ms and 1m0s (a duration such as 40ms), got -1ms",
				"nodes[1] (B).fail: a node that hangs never answers, so it cannot fail: drop fail or hang, got 1",
				`nodes[2] (C).failCode: a node that hangs never answers with a code: drop failCode or hang, got "internal"`,
				"nodes[3] (D).calls[0].attemptTimeout: is part of a retry policy, and D has none (retry: false), got 10ms",
			},
		},
		{name: "attempt timeout not a duration", give: "name: t\nnodes: [{name: A, calls: [{to: B, attemptTimeout: soon}]}, {name: B}]", want: []string{`topology: call to "B": attemptTimeout: must be a duration such as 40ms, got "soon"`}},
		{name: "attempt timeout without a unit", give: "name: t\nnodes: [{name: A, calls: [{to: B, attemptTimeout: 40}]}, {name: B}]", want: []string{`call to "B": attemptTimeout: must be a duration such as 40ms, got "40"`}},
		{name: "names ignore case", give: "name: t\nnodes: [{name: A, calls: [a]}, {name: a}]", want: []string{"nodes[1] (a).name: already used by nodes[0]"}},
		{name: "cycle", give: "name: t\nnodes: [{name: A, calls: [B]}, {name: B, calls: [C]}, {name: C, calls: [B]}]", want: []string{`topology "t": calls: the graph has a cycle: B → C → B`}},
		{name: "unreachable", give: "name: t\nnodes: [{name: A}, {name: B, calls: [A]}]", want: []string{"nodes[1] (B): not reachable from the root A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTopology([]byte(tt.give))
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestShippedTopologies(t *testing.T) {
	names := TopologyNames()
	assert.Equal(t, []string{"availability", "chain", "coincidental", "context-drop", "deep", "deep-drop", "fanout", "mixed", "no-retry-below", "overload", "overload-misnested"}, names)
	for _, name := range names {
		top, err := LoadTopology(name)
		require.NoError(t, err, name)
		assert.Equal(t, name, top.Name, "a shipped file is named after its topology")
		assert.NotEmpty(t, top.Description, name)
	}
	_, err := LoadTopology("moebius")
	assert.ErrorContains(t, err, `topology: no shipped topology "moebius" (have availability, chain,`)
}

func TestChainTopology(t *testing.T) {
	g, err := compile(Chain(4, 2))
	require.NoError(t, err)
	assert.Equal(t, []int{3, 2, 1, 0}, g.order, "children first")
	assert.Equal(t, []gedge{{0, 1}, {1, 2}, {2, 3}}, g.edges)
	assert.Equal(t, "B→C", g.edgeName(1))
	assert.Equal(t, map[yarpcerrors.Code]bool{yarpcerrors.CodeUnavailable: true}, g.failCodes())
	for d, n := range g.nodes {
		assert.Equal(t, []any{nodeName(d), d, d == 2}, []any{n.name, n.depth, n.fail == 1})
	}
	deep := mustTopology("deep")
	assert.Equal(t, deep.Nodes, Chain(25, 24).Nodes, "the deep file is the 25-deep chain")
}

func TestTopologyDepthsAndClone(t *testing.T) {
	top := mustTopology("fanout")
	g, err := compile(top)
	require.NoError(t, err)
	var depths []int
	for _, n := range g.nodes {
		depths = append(depths, n.depth)
	}
	assert.Equal(t, []int{0, 1, 1, 2, 2, 3}, depths, "the shortest distance from the root")

	c := top.Clone()
	c.Node("c").Calls[0].Times = 5
	c.Node("F").Fail = 0
	assert.Equal(t, 2, top.Node("C").Calls[0].Times, "the clone is deep")
	assert.Equal(t, 1.0, top.Node("F").Fail)
	assert.Nil(t, top.Node("Z"))
}

func TestTimedTopology(t *testing.T) {
	g, err := compile(mustTopology("overload-misnested"))
	require.NoError(t, err)
	assert.True(t, g.timed())
	assert.True(t, g.nodes[3].hang)
	var timeouts []time.Duration
	for _, n := range g.nodes {
		for _, c := range n.calls {
			timeouts = append(timeouts, c.attemptTimeout)
		}
	}
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 70 * time.Millisecond, 40 * time.Millisecond}, timeouts)
	assert.Equal(t, map[yarpcerrors.Code]bool{yarpcerrors.CodeDeadlineExceeded: true}, g.failCodes(), "a request reaching a hanging node times out")

	g, err = compile(Chain(3, 2))
	require.NoError(t, err)
	assert.False(t, g.timed())
}
