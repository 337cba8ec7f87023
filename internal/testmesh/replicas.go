package testmesh

import (
	"fmt"

	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
	yarpcpeer "go.uber.org/yarpc/peer"
	"go.uber.org/yarpc/peer/hostport"
	"go.uber.org/yarpc/peer/roundrobin"
)

// replicaOutbounds returns the outbounds to a callee's instances, listening
// on addrs, behind yarpc's round-robin peer list wrapped by wrap (nil:
// none), as a team runs a callee with several instances. Only HTTP.
func (e *Endpoint) replicaOutbounds(kind string, addrs []string, wrap func(peer.Chooser) peer.Chooser) (transport.Outbounds, error) {
	if kind != HTTP {
		return transport.Outbounds{}, fmt.Errorf("testmesh: several instances of a callee need %s, not %s", HTTP, kind)
	}
	t := e.httpTransport()
	ids := make([]peer.Identifier, 0, len(addrs))
	for _, a := range addrs {
		ids = append(ids, hostport.PeerIdentifier(a))
	}
	list := roundrobin.New(t)
	chooser := yarpcpeer.Bind(list, yarpcpeer.BindPeers(ids))
	var c peer.Chooser = chooser
	if wrap != nil {
		c = wrap(chooser)
	}
	out := t.NewOutbound(c)
	return transport.Outbounds{Unary: out}, nil
}
