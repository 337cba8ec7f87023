package errowntest

import (
	"sync/atomic"

	"github.com/errown/errown"
	"github.com/opentracing/opentracing-go"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
)

// ServiceConfig describes one service of a Mesh.
type ServiceConfig struct {
	// Name is the service name, unique in the Mesh. Required.
	Name string
	// Transport is the transport the service is served over: HTTP, GRPC
	// or TChannel. Required.
	Transport string
	// Errown configures errown on the service; nil means no errown at all
	// (a plain yarpc service, as in a mixed deployment).
	Errown *errown.Config
	// ErrownOptions are passed to errown.New, e.g. errown.WithScope with a
	// tally test scope. Ignored when Errown is nil.
	ErrownOptions []errown.Option
	// Callees are the services this one calls, by name; each must already
	// be started. Each is reached over its own transport.
	Callees []string
	// Handler serves Procedure. Default Echo.
	Handler Handler
	// ExtraOutbound, when set, runs on every outbound call inside errown's
	// middleware, that is once per attempt, and outside the Recorder.
	// Without errown it is the only outbound middleware besides the
	// Recorder, e.g. a plain retry middleware for a mesh without
	// ownership.
	ExtraOutbound middleware.UnaryOutbound
	// ExtraInbound, when set, runs on every inbound request inside
	// errown's inbound middleware, before the handler: an authenticator or
	// a load shedder, say, whose errors never reach the encoding layer (on
	// TChannel they are system errors, not application errors).
	ExtraInbound middleware.UnaryInbound
	// Procedures are served besides Procedure, as given: oneway or stream
	// procedures, say. They are not counted by Served.
	Procedures []transport.Procedure
	// Tracer traces the service's transports (yarpc's Tracer transport
	// option), e.g. the OpenTelemetry bridge's, to read errown's span tags
	// and events (docs/tracing.md). Default: yarpc's, the global tracer.
	Tracer opentracing.Tracer
}

// Service is a service a Mesh started.
type Service struct {
	name       string
	transport  string
	addr       string
	dispatcher *yarpc.Dispatcher
	middleware *errown.Middleware
	served     atomic.Int64
}

// Addr returns the host:port the service listens on.
func (s *Service) Addr() string { return s.addr }

// Served returns how many requests for Procedure reached the handler.
func (s *Service) Served() int64 { return s.served.Load() }

// Dispatcher returns the service's running dispatcher.
func (s *Service) Dispatcher() *yarpc.Dispatcher { return s.dispatcher }

// Middleware returns the service's errown middleware, nil when the service
// runs without errown. Its Introspect().InFlight is the requests errown tracks in
// flight: zero once the service is idle.
func (s *Service) Middleware() *errown.Middleware { return s.middleware }
