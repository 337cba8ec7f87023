package stormsim

import (
	"fmt"
	"net"

	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/transport/grpc"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/transport/tchannel"
)

// _localhost is where every node listens, on an ephemeral port.
const _localhost = "127.0.0.1:0"

// endpoint is one dispatcher's own transport: an inbound on 127.0.0.1
// (none for the client), outbounds to other nodes, and the address it
// listens on once its dispatcher has started.
type endpoint struct {
	// inbound is nil for an endpoint made with withInbound false.
	inbound transport.Inbound
	// outbound returns an outbound to the node listening on addr.
	outbound func(addr string) transport.UnaryOutbound
	// addr returns the listening address; valid after Start.
	addr func() string
	// abandon releases what was allocated when the dispatcher is never
	// started (the gRPC listener); a started dispatcher's Stop does it.
	abandon func()
}

// newEndpoint returns an endpoint of kind (one of Transports()) for
// service, listening on listen (host:port, port 0 for an ephemeral one).
// idleConns bounds the HTTP connections kept per callee.
func newEndpoint(kind, service, listen string, withInbound bool, idleConns int) (endpoint, error) {
	switch kind {
	case TransportHTTP:
		t := http.NewTransport(http.MaxIdleConnsPerHost(idleConns))
		e := endpoint{
			outbound: func(addr string) transport.UnaryOutbound { return t.NewSingleOutbound("http://" + addr) },
			addr:     func() string { return "" },
			abandon:  func() {},
		}
		if withInbound {
			in := t.NewInbound(listen)
			e.inbound = in
			e.addr = func() string { return in.Addr().String() }
		}
		return e, nil
	case TransportGRPC:
		t := grpc.NewTransport()
		e := endpoint{
			outbound: func(addr string) transport.UnaryOutbound { return t.NewSingleOutbound(addr) },
			addr:     func() string { return "" },
			abandon:  func() {},
		}
		if withInbound {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return endpoint{}, fmt.Errorf("listen for %s: %w", service, err)
			}
			e.inbound = t.NewInbound(ln)
			e.addr = func() string { return ln.Addr().String() }
			e.abandon = func() { _ = ln.Close() } // never served; nothing else to release
		}
		return e, nil
	case TransportTChannel:
		// TChannel's transport always listens, also for the client.
		t, err := tchannel.NewTransport(tchannel.ServiceName(service), tchannel.ListenAddr(listen))
		if err != nil {
			return endpoint{}, fmt.Errorf("tchannel transport for %s: %w", service, err)
		}
		e := endpoint{
			outbound: func(addr string) transport.UnaryOutbound { return t.NewSingleOutbound(addr) },
			addr:     t.ListenAddr,
			abandon:  func() {},
		}
		if withInbound {
			e.inbound = t.NewInbound()
		}
		return e, nil
	default:
		return endpoint{}, fmt.Errorf("transport: must be one of %v, got %q", Transports(), kind)
	}
}
