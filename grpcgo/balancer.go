package grpcgo

import (
	"sync"
	"sync/atomic"

	"github.com/errown/errown/internal/reqlog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
)

// _roundRobinBalancer is the name of errown's round-robin balancer for
// grpc-go, as a service config's loadBalancingConfig names it
// (WithRoundRobin sets it): grpc-go's round robin over the target's ready
// addresses, but for a retry of a call errown's policy sends, which goes
// to an address the call's earlier attempts did not reach, when the
// target has one (package retrypeer's rule for yarpc's peer lists).
const _roundRobinBalancer = "errown_round_robin"

var registerBalancer = sync.OnceFunc(func() {
	reqlog.ReadRoutes() // errown's retries carry the call's route from now on
	balancer.Register(base.NewBalancerBuilder(_roundRobinBalancer, pickerBuilder{}, base.Config{HealthCheck: true}))
})

// roundRobinConfig is the default service config of a ClientConn dialed
// WithRoundRobin.
const roundRobinConfig = `{"loadBalancingConfig": [{"` + _roundRobinBalancer + `": {}}]}`

// roundRobinDialOption registers errown's balancer, once, and returns the
// dial option that makes it the ClientConn's default.
func roundRobinDialOption() grpc.DialOption {
	registerBalancer()
	return grpc.WithDefaultServiceConfig(roundRobinConfig)
}

type pickerBuilder struct{}

func (pickerBuilder) Build(info base.PickerBuildInfo) balancer.Picker {
	if len(info.ReadySCs) == 0 {
		return base.NewErrPicker(balancer.ErrNoSubConnAvailable)
	}
	p := &picker{}
	for sc, sci := range info.ReadySCs {
		p.subConns = append(p.subConns, sc)
		p.addrs = append(p.addrs, sci.Address.Addr)
	}
	return p
}

// picker picks the ready SubConns in turn; a call errown may retry (its
// context carries a route) has its address recorded, and its retry goes
// to the next address in turn that none of its earlier attempts reached,
// else where the turn points.
type picker struct {
	subConns []balancer.SubConn
	addrs    []string
	next     atomic.Uint32
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	n := uint32(len(p.subConns))
	i := (p.next.Add(1) - 1) % n
	if route := reqlog.RouteFromContext(info.Ctx); route != nil {
		for k := range n {
			if j := (i + k) % n; !route.Used(p.addrs[j]) {
				i = j
				break
			}
		}
		route.Record(p.addrs[i])
	}
	return balancer.PickResult{SubConn: p.subConns[i]}, nil
}
