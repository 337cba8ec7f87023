package testmesh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/errown/errown/grpcgo"
	"github.com/errown/errown/nethttp"
	"google.golang.org/grpc"
)

// _shutdown bounds a graceful net/http Stop.
const _shutdown = 5 * time.Second

// listen listens on cfg.Listen, Loopback when it is empty.
func listen(cfg Config) (net.Listener, error) {
	addr := cfg.Listen
	if addr == "" {
		addr = Loopback
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for %s: %w", cfg.Name, err)
	}
	return l, nil
}

// startGRPC starts a grpc-go node: cfg.Interceptors outermost, then
// errown's server interceptor, then the services cfg.RegisterGRPC
// registers.
func (n *Node) startGRPC(cfg Config) error {
	if cfg.RegisterGRPC == nil {
		return errNoRegister
	}
	interceptors := cfg.Interceptors
	if n.mw != nil {
		interceptors = append(interceptors[:len(interceptors):len(interceptors)], grpcgo.UnaryServerInterceptor(n.mw, cfg.ServerOptions...))
	}
	opts := cfg.GRPCOptions
	if len(interceptors) > 0 {
		opts = append(opts[:len(opts):len(opts)], grpc.ChainUnaryInterceptor(interceptors...))
	}
	srv := grpc.NewServer(opts...)
	if err := cfg.RegisterGRPC(srv, n.mw); err != nil {
		return err
	}
	return n.serve(cfg, func(l net.Listener) error { return srv.Serve(l) }, func() error {
		if cfg.Graceful {
			srv.GracefulStop()
		} else {
			srv.Stop()
		}
		return nil
	})
}

// startHTTP starts a net/http node: cfg.OuterHandler around errown's
// Handler around what cfg.Handler returns.
func (n *Node) startHTTP(cfg Config) error {
	if cfg.Handler == nil {
		return errNoRegister
	}
	h, err := cfg.Handler(n.mw)
	if err != nil {
		return err
	}
	if n.mw != nil {
		h = nethttp.Handler(n.mw, h, cfg.HandlerOptions...)
	}
	if cfg.OuterHandler != nil {
		h = cfg.OuterHandler(h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	return n.serve(cfg, func(l net.Listener) error {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, func() error {
		if !cfg.Graceful {
			return srv.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), _shutdown)
		defer cancel()
		return srv.Shutdown(ctx)
	})
}

// serve listens, starts errown, and serves on a goroutine that stop ends
// and Stop waits for.
func (n *Node) serve(cfg Config, serve func(net.Listener) error, stop func() error) error {
	l, err := listen(cfg)
	if err != nil {
		return err
	}
	if err := n.startErrown(); err != nil {
		_ = l.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serve(l) // returns once stopped
	}()
	n.addr = l.Addr().String()
	n.stop = func() error {
		err := stop()
		<-done
		return err
	}
	return nil
}
