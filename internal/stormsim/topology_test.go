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
			name: "capacity, open-loop load and triggers",
			give: `
name: cap
rate: 240
duration: 12s
nodes:
  - {name: A, calls: [{to: B, attemptTimeout: 60ms}]}
  - name: B
    capacity: {workers: 2, serviceTime: 5ms, queue: 100}
    abandoned: leave
    triggers:
      - {kind: slow, at: 3s, for: 2s, factor: 10}
      - {kind: fail, at: 6s, for: 500ms}
      - {kind: crash, at: 8s, for: 1s}
`,
			want: &Topology{Name: "cap", Rate: 240, Duration: 12 * time.Second, Nodes: []Node{
				{Name: "A", Calls: []Call{{To: "B", AttemptTimeout: 60 * time.Millisecond}}},
				{
					Name: "B", Capacity: &Capacity{Workers: 2, ServiceTime: 5 * time.Millisecond, Queue: 100}, Abandoned: AbandonedLeave,
					Triggers: []Trigger{
						{Kind: TriggerSlow, At: 3 * time.Second, For: 2 * time.Second, Factor: 10},
						{Kind: TriggerFail, At: 6 * time.Second, For: 500 * time.Millisecond},
						{Kind: TriggerCrash, At: 8 * time.Second, For: time.Second},
					},
				},
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
			name: "instances",
			give: `
name: t
nodes:
  - {name: A, calls: [B, C, D, E], instances: 17}
  - {name: B, instances: 3, faulty: 3, fail: 1}
  - {name: C, instances: 3, faulty: 1}
  - {name: D, peerList: fewest-pending}
  - {name: E, instances: 2, peerList: sideways, triggers: [{kind: fail, at: 1s, for: 1s, instances: 3}]}
`,
			want: []string{
				"nodes[0] (A).instances: must be between 1 and 16, got 17",
				"nodes[1] (B).faulty: must be between 1 and instances-1 (2), got 3",
				"nodes[2] (C).faulty: is how many instances have the node's faults, and C has none (fail, hang), got 1",
				`nodes[3] (D).peerList: chooses among instances, and D has one (instances), got "fewest-pending"`,
				`nodes[4] (E).peerList: must be one of round-robin, fewest-pending, two-random-choices, random, got "sideways"`,
				"nodes[4] (E).triggers[0].instances: must be between 1 and instances (2), got 3",
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
		{
			name: "capacity and triggers",
			give: `
name: t
rate: -1
duration: 500ms
nodes:
  - {name: A, abandoned: serve, calls: [B, C, D]}
  - {name: B, capacity: {workers: 0, serviceTime: 0s, queue: -1}, abandoned: sometimes}
  - name: C
    capacity: {workers: 2000, serviceTime: 11s, queue: 100001}
    triggers:
      - {kind: slow, at: -1s, for: 0s, factor: 1}
      - {kind: slow, at: 1s, for: 1s, factor: 2000}
      - {kind: fail, at: 1500ms, for: 1s, factor: 2}
      - {kind: quake, at: 1s, for: 1s}
      - {kind: slow, at: 1500ms, for: 1s, factor: 2}
  - name: D
    hang: true
    triggers: [{kind: slow, at: 1s, for: 11m, factor: 2}, {kind: fail, at: 11m, for: 1s}]
`,
			want: []string{
				"rate: must be between 0 and 5000 root requests per second, got -1",
				"duration: must be between 1s and 10m0s (a duration such as 12s), got 500ms",
				`nodes[0] (A).abandoned: is what a node with a capacity does with its queue, and A has none, got "serve"`,
				"nodes[1] (B).capacity.workers: must be between 1 and 1024, got 0",
				"nodes[1] (B).capacity.serviceTime: must be between 1µs and 10s (a duration such as 5ms), got 0s",
				"nodes[1] (B).capacity.queue: must be between 0 and 100000, got -1",
				`nodes[1] (B).abandoned: must be serve or leave, got "sometimes"`,
				"nodes[2] (C).capacity.workers: must be between 1 and 1024, got 2000",
				"nodes[2] (C).capacity.serviceTime: must be between 1µs and 10s (a duration such as 5ms), got 11s",
				"nodes[2] (C).capacity.queue: must be between 0 and 100000, got 100001",
				"nodes[2] (C).triggers[0].factor: must be above 1 and at most 1000, got 1",
				"nodes[2] (C).triggers[0].at: must be between 0s and 10m0s (a duration such as 3s), got -1s",
				"nodes[2] (C).triggers[0].for: must be between 1ms and 10m0s (a duration such as 2s), got 0s",
				"nodes[2] (C).triggers[1].factor: must be above 1 and at most 1000, got 2000",
				"nodes[2] (C).triggers[2].factor: only a slow trigger has one, got 2",
				`nodes[2] (C).triggers[3].kind: must be slow, fail or crash, got "quake"`,
				"nodes[2] (C).triggers[4]: overlaps triggers[1], of the same kind slow",
				"nodes[3] (D).triggers[0].kind: slow multiplies a capacity's service time, and D has none",
				"nodes[3] (D).triggers[0].for: must be between 1ms and 10m0s (a duration such as 2s), got 11m0s",
				"nodes[3] (D).triggers[1].kind: a node that hangs never answers, so it cannot fail",
				"nodes[3] (D).triggers[1].at: must be between 0s and 10m0s (a duration such as 3s), got 11m0s",
			},
		},
		{name: "service time not a duration", give: "name: t\nnodes: [{name: A, capacity: {workers: 1, serviceTime: soon, queue: 1}}]", want: []string{"cannot unmarshal !!str `soon` into time.Duration"}},
		{name: "unknown capacity key", give: "name: t\nnodes: [{name: A, capacity: {workers: 1, serviceTime: 1ms, queue: 1, threads: 2}}]", want: []string{"field threads not found"}},
		{name: "unknown trigger key", give: "name: t\nnodes: [{name: A, triggers: [{kind: fail, at: 1s, for: 1s, when: now}]}]", want: []string{"field when not found"}},
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
	assert.Equal(t, []string{"availability", "capacity", "capacity-crash", "capacity-fanout", "chain", "coincidental", "context-drop", "deep", "deep-drop", "fanout", "mixed", "no-retry-below", "overload", "overload-misnested", "partial", "partial-independent"}, names)
	for _, name := range names {
		top, err := LoadTopology(name)
		require.NoError(t, err, name)
		assert.Equal(t, name, top.Name, "a shipped file is named after its topology")
		assert.NotEmpty(t, top.Description, name)
	}
	_, err := LoadTopology("moebius")
	assert.ErrorContains(t, err, `topology: no shipped topology "moebius" (have availability, capacity,`)
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
	capacity := shortCapacity()
	cc := capacity.Clone()
	cc.Node("C").Capacity.Queue = 1
	cc.Node("C").Triggers[0].Factor = 2
	assert.Equal(t, 50, capacity.Node("C").Capacity.Queue, "the clone's capacity is its own")
	assert.Equal(t, 10.0, capacity.Node("C").Triggers[0].Factor, "the clone's triggers are its own")
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

	g, err = compile(&Topology{Name: "c", Nodes: []Node{
		{Name: "A", Calls: []Call{{To: "B"}}},
		{Name: "B", Capacity: &Capacity{Workers: 1, ServiceTime: time.Millisecond}},
	}})
	require.NoError(t, err)
	assert.True(t, g.timed(), "a capacity alone turns on time")
	assert.True(t, g.capacity())
}

// FuzzParseTopology feeds ParseTopology arbitrary YAML: it never panics,
// and what it accepts validates and compiles, within its limits.
func FuzzParseTopology(f *testing.F) {
	for _, name := range TopologyNames() {
		b, err := TopologyYAML(name)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("name: t\nrate: 1e9\nnodes: [{name: A, capacity: {workers: 1, serviceTime: 1ns, queue: 0}, triggers: [{kind: slow, at: 0s, for: 1ms, factor: 1.5}]}]"))
	f.Add([]byte("name: t\nnodes: [{name: A, abandoned: leave, triggers: [{kind: crash, at: 1s, for: 1s}, {kind: crash, at: 1500ms, for: 1s}]}]"))
	f.Add([]byte("name: t\nnodes: [{name: A, calls: [B]}, {name: B, instances: 3, faulty: 1, hang: true, peerList: fewest-pending, triggers: [{kind: crash, at: 1s, for: 1s, instances: 2}]}]"))
	f.Add([]byte("name: t\nnodes: [{name: A, instances: 17, faulty: -1, peerList: random}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		top, err := ParseTopology(b)
		if err != nil {
			return
		}
		g, err := compile(top)
		require.NoError(t, err, "a parsed topology compiles")
		assert.LessOrEqual(t, len(g.nodes), MaxNodes)
		assert.True(t, top.Rate >= 0 && top.Rate <= MaxRate, "rate %v", top.Rate)
		for _, n := range top.Nodes {
			if c := n.Capacity; c != nil {
				assert.True(t, c.Workers >= 1 && c.Workers <= MaxWorkers && c.Queue >= 0 && c.Queue <= MaxQueue, "capacity %+v", *c)
			} else {
				assert.Empty(t, n.Abandoned, "abandoned needs a capacity")
			}
			instances := n.instances()
			assert.True(t, instances >= 1 && instances <= MaxInstances, "instances %d", n.Instances)
			assert.True(t, n.Faulty >= 0 && n.Faulty < instances, "faulty %d of %d", n.Faulty, instances)
			assert.True(t, n.Faulty == 0 || n.Fail > 0 || n.Hang || n.FailCode != "", "faulty instances need a fault: %+v", n)
			assert.True(t, n.PeerList == "" || instances > 1 && oneOf(n.PeerList, PeerLists()), "peer list %q of %d instances", n.PeerList, instances)
			for _, tr := range n.Triggers {
				assert.True(t, tr.Instances >= 0 && tr.Instances <= instances, "trigger %+v of %d instances", tr, instances)
				assert.True(t, tr.At >= 0 && tr.For >= MinTriggerFor && tr.End() <= 2*MaxDuration, "trigger %+v", tr)
				assert.Equal(t, tr.Kind == TriggerSlow, tr.Factor > 1, "only a slow trigger has a factor: %+v", tr)
			}
		}
	})
}

// shortCapacity is a three-second capacity run: A→B→C, C 2 workers × 5ms
// (400/s) behind a queue of 50, 200 root requests/s, C ten times slower
// from 1s to 2s.
func shortCapacity() *Topology {
	return &Topology{Name: "short", Rate: 200, Duration: 3 * time.Second, Nodes: []Node{
		{Name: "A", Calls: []Call{{To: "B", AttemptTimeout: 300 * time.Millisecond}}},
		{Name: "B", Calls: []Call{{To: "C", AttemptTimeout: 60 * time.Millisecond}}},
		{
			Name: "C", Capacity: &Capacity{Workers: 2, ServiceTime: 5 * time.Millisecond, Queue: 50},
			Triggers: []Trigger{{Kind: TriggerSlow, At: time.Second, For: time.Second, Factor: 10}},
		},
	}}
}
