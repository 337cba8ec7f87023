package testmesh

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/errown/errown"
	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/nethttp"
	"go.uber.org/multierr"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/peer"
	"go.uber.org/yarpc/api/transport"
	"google.golang.org/grpc"
)

// Config describes one node.
type Config struct {
	// Name is the service name. Required for a yarpc node (at least two
	// characters).
	Name string
	// Kind is HTTP, GRPC or TChannel for a yarpc dispatcher, GRPCGo or
	// NetHTTP for a server of errown's adapters. Required.
	Kind string
	// Listen is where the node listens, host:port: "" for Loopback, the
	// address of a node's earlier start to start it again there.
	Listen string
	// Errown configures errown on the node; nil runs none.
	Errown *errown.Config
	// ErrownOptions are passed to errown.New (a scope, a logger, a storm
	// hook); ignored when Errown is nil.
	ErrownOptions []errown.Option
	// Graceful has Stop let the requests in flight finish (GracefulStop,
	// Shutdown) rather than end them; a yarpc dispatcher always does.
	Graceful bool

	// yarpc nodes

	// Transport configures the yarpc transports of the node's Endpoint.
	Transport TransportOptions
	// Callees are the nodes a yarpc node calls, each an outbound under its
	// name on the node's Endpoint, over the transport that speaks its kind.
	Callees []Callee
	// Inbound runs on every request inside errown's inbound middleware,
	// Outbound on every attempt (retries included) inside its outbound
	// middleware; without errown they are the only middleware but
	// OuterInbound.
	Inbound  middleware.UnaryInbound
	Outbound middleware.UnaryOutbound
	// OuterInbound runs on every request outside errown's inbound
	// middleware: it sees the response errown set.
	OuterInbound middleware.UnaryInbound
	// Register registers the yarpc node's procedures on its unstarted
	// dispatcher and builds its handlers' clients; mw is the node's errown,
	// nil without.
	Register func(d *yarpc.Dispatcher, mw *errown.Middleware) error

	// grpc-go nodes

	// Interceptors run outside errown's server interceptor.
	Interceptors []grpc.UnaryServerInterceptor
	// ServerOptions are given to errown's server interceptor.
	ServerOptions []grpcgo.Option
	// GRPCOptions are given to grpc.NewServer besides the interceptors.
	GRPCOptions []grpc.ServerOption
	// RegisterGRPC registers the grpc-go node's services and builds their
	// clients; mw is the node's errown, nil without.
	RegisterGRPC func(s *grpc.Server, mw *errown.Middleware) error

	// net/http nodes

	// Handler returns what the net/http node serves, inside errown's
	// Handler; mw is the node's errown, nil without.
	Handler func(mw *errown.Middleware) (http.Handler, error)
	// HandlerOptions are given to errown's Handler.
	HandlerOptions []nethttp.HandlerOption
	// OuterHandler, when set, wraps errown's Handler: a tracing handler, a
	// recorder of the responses errown set.
	OuterHandler func(http.Handler) http.Handler
}

// Callee is a node a yarpc node calls.
type Callee struct {
	// Name is the callee's service name, the outbound's key.
	Name string
	// Kind is the callee's kind.
	Kind string
	// Addr is the host:port the callee listens on.
	Addr string
	// Addrs, in Addr's place, are the callee's instances' host:ports,
	// behind yarpc's round-robin peer list (HTTP only).
	Addrs []string
	// Chooser, when set, wraps the peer list of Addrs (retrypeer.New).
	Chooser func(peer.Chooser) peer.Chooser
	// List, when set, builds the peer list of Addrs on the transport in
	// place of round-robin (pendingheap.New, say).
	List func(t peer.Transport) peer.ChooserList
}

// Node is a started node.
type Node struct {
	name string
	kind string
	addr string
	mw   *errown.Middleware
	d    *yarpc.Dispatcher // a yarpc node's

	stopOnce sync.Once
	stop     func() error // the server's or the dispatcher's
	stopErr  error
}

// Name returns the node's service name.
func (n *Node) Name() string { return n.name }

// Kind returns the node's kind.
func (n *Node) Kind() string { return n.kind }

// Addr returns the host:port the node listens on.
func (n *Node) Addr() string { return n.addr }

// Middleware returns the node's errown, nil without.
func (n *Node) Middleware() *errown.Middleware { return n.mw }

// Dispatcher returns a yarpc node's dispatcher, nil for a grpc-go or
// net/http node.
func (n *Node) Dispatcher() *yarpc.Dispatcher { return n.d }

// Stop stops the node, then its errown (which writes the memory's
// snapshot). Every call returns the first one's error.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() {
		n.stopErr = n.stop()
		if n.mw != nil {
			n.stopErr = multierr.Append(n.stopErr, n.mw.Stop())
		}
	})
	return n.stopErr
}

// Start builds and starts the node cfg describes: errown first, then the
// server or dispatcher. On error nothing is left running.
func Start(cfg Config) (*Node, error) {
	n := &Node{name: cfg.Name, kind: cfg.Kind}
	if cfg.Errown != nil {
		mw, err := errown.New(*cfg.Errown, cfg.ErrownOptions...)
		if err != nil {
			return nil, fmt.Errorf("errown: %w", err)
		}
		n.mw = mw
	}
	var err error
	switch cfg.Kind {
	case HTTP, GRPC, TChannel:
		err = n.startYARPC(cfg)
	case GRPCGo:
		err = n.startGRPC(cfg)
	case NetHTTP:
		err = n.startHTTP(cfg)
	default:
		err = unknownKind(cfg.Kind, append(slices.Clone(Transports), GRPCGo, NetHTTP))
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

// startErrown starts n's errown, if any, before n serves.
func (n *Node) startErrown() error {
	if n.mw == nil {
		return nil
	}
	if err := n.mw.Start(); err != nil {
		return fmt.Errorf("errown: start: %w", err)
	}
	return nil
}

// stopErrown stops n's errown, if any, when n did not start.
func (n *Node) stopErrown(err error) error {
	if n.mw == nil {
		return err
	}
	return multierr.Append(err, n.mw.Stop())
}

func (n *Node) startYARPC(cfg Config) error {
	e := NewEndpoint(cfg.Name, cfg.Transport)
	in, err := e.Inbound(cfg.Kind, cfg.Listen)
	if err != nil {
		return err
	}
	d, err := n.dispatcher(cfg, e, in)
	if err != nil {
		in.Abort()
		return err
	}
	if err := n.startErrown(); err != nil {
		in.Abort()
		return err
	}
	if err := d.Start(); err != nil {
		in.Abort()
		return n.stopErrown(fmt.Errorf("start %s: %w", cfg.Name, err))
	}
	n.d, n.addr, n.stop = d, in.Addr(), d.Stop
	return nil
}

// dispatcher builds the yarpc node's unstarted dispatcher, its procedures
// registered.
func (n *Node) dispatcher(cfg Config, e *Endpoint, in Inbound) (*yarpc.Dispatcher, error) {
	outbounds, err := e.outboundsTo(cfg.Callees)
	if err != nil {
		return nil, err
	}
	ycfg := yarpc.Config{
		Name:               cfg.Name,
		Inbounds:           yarpc.Inbounds{in},
		Outbounds:          outbounds,
		InboundMiddleware:  yarpc.InboundMiddleware{Unary: cfg.Inbound},
		OutboundMiddleware: yarpc.OutboundMiddleware{Unary: cfg.Outbound},
	}
	if n.mw != nil {
		ycfg = n.mw.Apply(ycfg)
	}
	if cfg.OuterInbound != nil {
		ycfg.InboundMiddleware.Unary = yarpc.UnaryInboundMiddleware(cfg.OuterInbound, ycfg.InboundMiddleware.Unary)
	}
	d, err := newDispatcher(ycfg)
	if err != nil {
		return nil, err
	}
	if cfg.Register != nil {
		if err := cfg.Register(d, n.mw); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// newDispatcher is yarpc.NewDispatcher returning an error where it panics
// on an invalid config (a service name under two characters, say).
func newDispatcher(cfg yarpc.Config) (d *yarpc.Dispatcher, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return yarpc.NewDispatcher(cfg), nil
}

// NewClient starts a dispatcher called name with no inbound and an
// outbound to each callee: a caller of the mesh from outside, without
// errown, outbound its only middleware (nil: none). Stop it when done.
func NewClient(name string, opts TransportOptions, outbound middleware.UnaryOutbound, callees ...Callee) (*yarpc.Dispatcher, error) {
	outbounds, err := NewEndpoint(name, opts).outboundsTo(callees)
	if err != nil {
		return nil, err
	}
	d, err := newDispatcher(yarpc.Config{
		Name:               name,
		Outbounds:          outbounds,
		OutboundMiddleware: yarpc.OutboundMiddleware{Unary: outbound},
	})
	if err != nil {
		return nil, err
	}
	if err := d.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return d, nil
}

// outboundsTo returns an outbound on e to each callee, under its name,
// over the yarpc transport that speaks its kind.
func (e *Endpoint) outboundsTo(callees []Callee) (yarpc.Outbounds, error) {
	outbounds := make(yarpc.Outbounds, len(callees))
	for _, c := range callees {
		var outs transport.Outbounds
		var err error
		if len(c.Addrs) > 0 {
			outs, err = e.replicaOutbounds(Wire(c.Kind), c.Addrs, c.List, c.Chooser)
		} else {
			outs, err = e.Outbounds(Wire(c.Kind), c.Addr)
		}
		if err != nil {
			return nil, err
		}
		outbounds[c.Name] = outs
	}
	return outbounds, nil
}

// errNoRegister is the error of a native node that serves nothing.
var errNoRegister = errors.New("nothing to serve")
