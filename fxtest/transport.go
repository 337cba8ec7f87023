package fxtest

import (
	"fmt"
	"net"

	"github.com/opentracing/opentracing-go"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/transport/grpc"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/transport/tchannel"
)

// Transports a Mesh can run services on: yarpc's transport names.
const (
	HTTP     = "http"
	GRPC     = "grpc"
	TChannel = "tchannel"
)

// Transports lists every transport a Mesh supports, for table tests that
// run a scenario over each.
var Transports = []string{HTTP, GRPC, TChannel}

// _loopback is where every inbound listens.
const _loopback = "127.0.0.1:0"

// transports builds, at most once each, the yarpc transports one
// dispatcher needs. The dispatcher starts and stops them.
type transports struct {
	name string // of the service, which TChannel needs
	http *http.Transport
	grpc *grpc.Transport
	tch  *tchannel.Transport

	tracer opentracing.Tracer // or nil: yarpc's default
}

func (ts *transports) httpTransport() *http.Transport {
	if ts.http == nil {
		var opts []http.TransportOption
		if ts.tracer != nil {
			opts = append(opts, http.Tracer(ts.tracer))
		}
		ts.http = http.NewTransport(opts...)
	}
	return ts.http
}

func (ts *transports) grpcTransport() *grpc.Transport {
	if ts.grpc == nil {
		var opts []grpc.TransportOption
		if ts.tracer != nil {
			opts = append(opts, grpc.Tracer(ts.tracer))
		}
		ts.grpc = grpc.NewTransport(opts...)
	}
	return ts.grpc
}

func (ts *transports) tchannelTransport() (*tchannel.Transport, error) {
	if ts.tch == nil {
		opts := []tchannel.TransportOption{tchannel.ServiceName(ts.name), tchannel.ListenAddr(_loopback)}
		if ts.tracer != nil {
			opts = append(opts, tchannel.Tracer(ts.tracer))
		}
		t, err := tchannel.NewTransport(opts...)
		if err != nil {
			return nil, err
		}
		ts.tch = t
	}
	return ts.tch, nil
}

// inbound is a built inbound and how to learn its address once started.
type inbound struct {
	transport.Inbound
	addr func() string
	// abort releases what the inbound holds before it is started (the
	// gRPC listener) when the service does not start after all.
	abort func()
}

func (ts *transports) inbound(name string) (inbound, error) {
	switch name {
	case HTTP:
		in := ts.httpTransport().NewInbound(_loopback)
		return inbound{Inbound: in, addr: func() string { return in.Addr().String() }, abort: func() {}}, nil
	case GRPC:
		l, err := net.Listen("tcp", _loopback)
		if err != nil {
			return inbound{}, err
		}
		in := ts.grpcTransport().NewInbound(l)
		return inbound{Inbound: in, addr: func() string { return l.Addr().String() }, abort: func() { _ = l.Close() }}, nil
	case TChannel:
		t, err := ts.tchannelTransport()
		if err != nil {
			return inbound{}, err
		}
		return inbound{Inbound: t.NewInbound(), addr: t.ListenAddr, abort: func() {}}, nil
	default:
		return inbound{}, fmt.Errorf("unknown transport %q (want %q, %q or %q)", name, HTTP, GRPC, TChannel)
	}
}

// outbounds returns the outbounds to a service listening on addr over
// transport name: unary always, oneway over HTTP and streams over gRPC,
// the only transports where yarpc has them.
func (ts *transports) outbounds(name, addr string) (transport.Outbounds, error) {
	switch name {
	case HTTP:
		out := ts.httpTransport().NewSingleOutbound("http://" + addr)
		return transport.Outbounds{Unary: out, Oneway: out}, nil
	case GRPC:
		out := ts.grpcTransport().NewSingleOutbound(addr)
		return transport.Outbounds{Unary: out, Stream: out}, nil
	case TChannel:
		t, err := ts.tchannelTransport()
		if err != nil {
			return transport.Outbounds{}, err
		}
		return transport.Outbounds{Unary: t.NewSingleOutbound(addr)}, nil
	default:
		return transport.Outbounds{}, fmt.Errorf("unknown transport %q (want %q, %q or %q)", name, HTTP, GRPC, TChannel)
	}
}
