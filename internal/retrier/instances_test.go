package retrier

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/errown/errown/internal/calls"
	"github.com/errown/errown/internal/reqlog"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
)

func TestInstancesRecord(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	many := make([]string, _instancesPerCallee+1) // peer0 first, evicted
	for i := range many {
		many[i] = fmt.Sprintf("peer%d", i)
	}
	manyWant := make([]retry.InstanceView, 0, _instancesPerCallee)
	for i := len(many) - 1; i >= 1; i-- {
		manyWant = append(manyWant, retry.InstanceView{Callee: "callee", Peer: many[i], Failed: 1, Last: at(i + 1)})
	}
	tests := []struct {
		name string
		give []string // peers recorded, one a second from t0+1s
		want []retry.InstanceView
	}{
		{name: "none", give: nil, want: nil},
		{name: "one peer, twice", give: []string{"a:1", "a:1"}, want: []retry.InstanceView{
			{Callee: "callee", Peer: "a:1", Failed: 2, Last: at(2)},
		}},
		{name: "newest first", give: []string{"a:1", "b:2", "a:1", "c:3"}, want: []retry.InstanceView{
			{Callee: "callee", Peer: "c:3", Failed: 1, Last: at(4)},
			{Callee: "callee", Peer: "a:1", Failed: 2, Last: at(3)},
			{Callee: "callee", Peer: "b:2", Failed: 1, Last: at(2)},
		}},
		{name: "past the bound, the least recent makes room", give: many, want: manyWant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: t0}
			m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, clock.option())
			for _, p := range tt.give {
				clock.Advance(time.Second)
				m.callees["callee"].instances.failed(p)
			}
			assert.Equal(t, tt.want, m.Instances())
		})
	}
}

// An instance is listed when a call its attempt failed is then served by
// another instance: not on a first attempt's success, not when every
// instance failed the call (the callee failed, not an instance).
func TestMiddlewareInstances(t *testing.T) {
	defer reqlog.SetRoutesRead(true)() // as a retrypeer chooser in the process sets it
	tests := []struct {
		name       string
		giveScript []step
		wantPeers  []string
	}{
		{name: "served first", giveScript: []step{succeed("ok")}, wantPeers: nil},
		{name: "failed, then served by another", giveScript: []step{fail(errUnavailable), succeed("ok")}, wantPeers: []string{"peer1"}},
		{name: "failed on both", giveScript: []step{fail(errUnavailable), fail(errUnavailable)}, wantPeers: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}, Budget: retry.BudgetConfig{Disabled: true}}, newClock().option())
			out := newOutbound(choosingPeers(tt.giveScript...)...)
			var state CallState
			_, _ = m.Call(WithCallState(context.Background(), &state), req("callee", "get", "x"), out)
			var peers []string
			for _, v := range m.Instances() {
				peers = append(peers, v.Peer)
			}
			assert.Equal(t, tt.wantPeers, peers)
		})
	}
}

// A call served by the only peer its attempts went to, the steady state,
// tells the table nothing and allocates nothing there.
func TestInstancesServedByItsPeerAllocatesNothing(t *testing.T) {
	m := newMiddleware(t, retry.Config{Policies: []retry.PolicyConfig{{Service: "callee", Idempotent: new(true)}}}, newClock().option())
	record := m.callees["callee"].instances.failed
	var route calls.Route
	route.Record("a:1")
	allocs := testing.AllocsPerRun(100, func() { route.Served(record) })
	assert.Zero(t, allocs)
	assert.Empty(t, m.Instances())
}
