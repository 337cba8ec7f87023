package testmesh

import (
	"fmt"
	"net"

	"github.com/opentracing/opentracing-go"
	"go.uber.org/yarpc/api/backoff"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/transport/grpc"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/transport/tchannel"
)

// The kinds of node: yarpc's transport names for a yarpc dispatcher, and
// the two servers errown's adapters run on.
const (
	HTTP     = "http"
	GRPC     = "grpc"
	TChannel = "tchannel"
	GRPCGo   = "grpc-go"
	NetHTTP  = "net/http"
)

// Transports are the yarpc transports, for table tests that run a
// scenario over each.
var Transports = []string{HTTP, GRPC, TChannel}

// Loopback is where a node listens when it is given no address: 127.0.0.1
// on an ephemeral port.
const Loopback = "127.0.0.1:0"

// TransportOptions configure the yarpc transports of an Endpoint. The zero
// value is yarpc's defaults.
type TransportOptions struct {
	// Tracer traces the transports (yarpc's Tracer option). Default: the
	// global tracer.
	Tracer opentracing.Tracer
	// IdleConns bounds the idle HTTP connections kept per host.
	IdleConns int
	// Reconnect is the gRPC transport's reconnect backoff.
	Reconnect backoff.Strategy
}

// Endpoint builds, at most once each, the yarpc transports one dispatcher
// needs. The dispatcher starts and stops them.
type Endpoint struct {
	service string // which TChannel needs
	opts    TransportOptions
	http    *http.Transport
	grpc    *grpc.Transport
	tch     *tchannel.Transport
}

// NewEndpoint returns the endpoint of the dispatcher called service.
func NewEndpoint(service string, opts TransportOptions) *Endpoint {
	return &Endpoint{service: service, opts: opts}
}

func (e *Endpoint) httpTransport() *http.Transport {
	if e.http == nil {
		var opts []http.TransportOption
		if e.opts.Tracer != nil {
			opts = append(opts, http.Tracer(e.opts.Tracer))
		}
		if e.opts.IdleConns > 0 {
			opts = append(opts, http.MaxIdleConnsPerHost(e.opts.IdleConns))
		}
		e.http = http.NewTransport(opts...)
	}
	return e.http
}

func (e *Endpoint) grpcTransport() *grpc.Transport {
	if e.grpc == nil {
		var opts []grpc.TransportOption
		if e.opts.Tracer != nil {
			opts = append(opts, grpc.Tracer(e.opts.Tracer))
		}
		if e.opts.Reconnect != nil {
			opts = append(opts, grpc.BackoffStrategy(e.opts.Reconnect))
		}
		e.grpc = grpc.NewTransport(opts...)
	}
	return e.grpc
}

// tchannelTransport returns the TChannel transport, listening on listen
// when it is built now: TChannel's transport always listens, also for a
// dispatcher with outbounds only.
func (e *Endpoint) tchannelTransport(listen string) (*tchannel.Transport, error) {
	if e.tch == nil {
		opts := []tchannel.TransportOption{tchannel.ServiceName(e.service), tchannel.ListenAddr(listen)}
		if e.opts.Tracer != nil {
			opts = append(opts, tchannel.Tracer(e.opts.Tracer))
		}
		t, err := tchannel.NewTransport(opts...)
		if err != nil {
			return nil, fmt.Errorf("tchannel transport for %s: %w", e.service, err)
		}
		e.tch = t
	}
	return e.tch, nil
}

// Inbound is a built yarpc inbound and how to learn its address once its
// dispatcher started.
type Inbound struct {
	transport.Inbound
	// Addr returns the host:port the inbound listens on, once started.
	Addr func() string
	// Abort releases what an unstarted inbound holds (the gRPC listener)
	// when its dispatcher does not start; a started dispatcher's Stop does.
	Abort func()
}

// Inbound returns an inbound of the yarpc transport kind listening on
// listen (host:port; "" for Loopback). Build it before any TChannel
// outbound, which would have the TChannel transport listen on Loopback.
func (e *Endpoint) Inbound(kind, listen string) (Inbound, error) {
	if listen == "" {
		listen = Loopback
	}
	switch kind {
	case HTTP:
		in := e.httpTransport().NewInbound(listen)
		return Inbound{Inbound: in, Addr: func() string { return in.Addr().String() }, Abort: func() {}}, nil
	case GRPC:
		l, err := net.Listen("tcp", listen)
		if err != nil {
			return Inbound{}, fmt.Errorf("listen for %s: %w", e.service, err)
		}
		in := e.grpcTransport().NewInbound(l)
		return Inbound{Inbound: in, Addr: func() string { return l.Addr().String() }, Abort: func() { _ = l.Close() }}, nil
	case TChannel:
		t, err := e.tchannelTransport(listen)
		if err != nil {
			return Inbound{}, err
		}
		return Inbound{Inbound: t.NewInbound(), Addr: t.ListenAddr, Abort: func() {}}, nil
	default:
		return Inbound{}, unknownKind(kind, Transports)
	}
}

// Outbounds returns the outbounds to a node listening on addr that speaks
// the yarpc transport kind: unary always, oneway over HTTP and streams
// over gRPC, the only transports where yarpc has them.
func (e *Endpoint) Outbounds(kind, addr string) (transport.Outbounds, error) {
	switch kind {
	case HTTP:
		out := e.httpTransport().NewSingleOutbound("http://" + addr)
		return transport.Outbounds{Unary: out, Oneway: out}, nil
	case GRPC:
		out := e.grpcTransport().NewSingleOutbound(addr)
		return transport.Outbounds{Unary: out, Stream: out}, nil
	case TChannel:
		t, err := e.tchannelTransport(Loopback)
		if err != nil {
			return transport.Outbounds{}, err
		}
		return transport.Outbounds{Unary: t.NewSingleOutbound(addr)}, nil
	default:
		return transport.Outbounds{}, unknownKind(kind, Transports)
	}
}

// Wire returns the yarpc transport that speaks to a node of kind: gRPC
// for a grpc-go server, HTTP for a net/http one, kind itself for a yarpc
// dispatcher.
func Wire(kind string) string {
	switch kind {
	case GRPCGo:
		return GRPC
	case NetHTTP:
		return HTTP
	}
	return kind
}

func unknownKind(kind string, want []string) error {
	return fmt.Errorf("unknown transport %q (want one of %q)", kind, want)
}
