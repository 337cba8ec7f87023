package testmesh

import (
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
	yarpcpeer "go.uber.org/yarpc/peer"
	"go.uber.org/yarpc/peer/hostport"
	"go.uber.org/yarpc/peer/roundrobin"
)

// replicaOutbounds returns the unary outbound to a callee's instances at
// addrs over the yarpc transport kind, behind the peer list list builds
// (nil: round-robin), wrapped by wrap (nil: none).
func (e *Endpoint) replicaOutbounds(kind string, addrs []string, list func(peer.Transport) peer.ChooserList, wrap func(peer.Chooser) peer.Chooser) (transport.Outbounds, error) {
	var (
		t   peer.Transport
		out func(peer.Chooser) transport.UnaryOutbound
	)
	switch kind {
	case HTTP:
		ht := e.httpTransport()
		t, out = ht, func(c peer.Chooser) transport.UnaryOutbound { return ht.NewOutbound(c) }
	case GRPC:
		gt := e.grpcTransport()
		t, out = gt, func(c peer.Chooser) transport.UnaryOutbound { return gt.NewOutbound(c) }
	case TChannel:
		tt, err := e.tchannelTransport(Loopback)
		if err != nil {
			return transport.Outbounds{}, err
		}
		t, out = tt, func(c peer.Chooser) transport.UnaryOutbound { return tt.NewOutbound(c) }
	default:
		return transport.Outbounds{}, unknownKind(kind, Transports)
	}
	ids := make([]peer.Identifier, 0, len(addrs))
	for _, a := range addrs {
		ids = append(ids, hostport.PeerIdentifier(a))
	}
	var l peer.ChooserList
	if list != nil {
		l = list(t)
	} else {
		l = roundrobin.New(t)
	}
	var c peer.Chooser = yarpcpeer.Bind(l, yarpcpeer.BindPeers(ids))
	if wrap != nil {
		c = wrap(c)
	}
	return transport.Outbounds{Unary: out(c)}, nil
}
