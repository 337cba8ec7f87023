// Package adapt gives errown's own adapters, grpcgo and nethttp, the
// parts of an *errown.Middleware they run on something other than a
// yarpc dispatcher. The root package sets its functions when it is
// initialised (as grpc-go's internal package does for its own packages):
// the adapters reach a Middleware's parts through them, and nothing of
// them is API. NoLifecycle is the lifecycle of the outbounds the
// adapters make per call.
package adapt

import (
	"github.com/errown/errown/ownership"
	"go.uber.org/config"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
)

// Parts are what an adapter runs of a Middleware: the unary inbound and
// outbound middleware (those of Middleware.Inbound and
// Middleware.Outbound) and the header names of the Config the Middleware
// was built from, which the adapter reads on its own wire.
type Parts struct {
	Inbound  middleware.UnaryInbound
	Outbound middleware.UnaryOutbound
	Headers  ownership.Headers
}

// Set by package errown, whose *Middleware mw is.
var (
	// PartsOf returns mw's Parts. Unlike Middleware.Inbound and Outbound,
	// it counts as wiring: once an adapter has taken the middleware, an
	// fx application's start does not fail with ErrNotWired for want of
	// a dispatcher, and does not check that retry policies name services
	// the dispatcher calls (the adapter's clients call services errown
	// does not know). An adapter calls it when its server or client is
	// built, as fx constructors do, not later.
	PartsOf func(mw any) Parts
	// AttemptsOf returns mw's innermost attempt step in its adapters'
	// form (a hedge it holds back answers with the refusal, never with a
	// success it could not deliver into the adapter's reply), through
	// which an adapter runs each physical attempt its client sends,
	// below the application's own retries. It counts as wiring.
	AttemptsOf func(mw any) middleware.UnaryOutbound
	// CheckConfig reads and validates errown's configuration from the
	// application's provider p (or y), files (an errown.ConfigFiles, or
	// nil) naming the files merged into it, as errown's modules do in
	// their first fx invoke, and returns the error as it is: an adapter
	// module placed before errown's runs it first, so that the
	// application's error leads with errown's message.
	CheckConfig func(p config.Provider, y *config.YAML, files any) error
)

// The adapters hand errown's outbound middleware a transport.UnaryOutbound
// per call or per attempt: in docs/DESIGN.md's data flow, the last step
// before the network. Such an outbound is never started or stopped; it
// embeds NoLifecycle for the methods that say so.

// NoLifecycle gives the type that embeds it the Start, Stop, IsRunning and
// Transports methods of a transport.UnaryOutbound: always running, with
// nothing to start or stop and no transport of its own.
type NoLifecycle struct{}

// Start implements transport.Lifecycle: there is nothing to start.
func (NoLifecycle) Start() error { return nil }

// Stop implements transport.Lifecycle: there is nothing to stop.
func (NoLifecycle) Stop() error { return nil }

// IsRunning implements transport.Lifecycle: always.
func (NoLifecycle) IsRunning() bool { return true }

// Transports implements transport.Outbound: none.
func (NoLifecycle) Transports() []transport.Transport { return nil }
