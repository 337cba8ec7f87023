// Package adapt gives errown's own adapters, grpcgo and nethttp, the
// parts of an *errown.Middleware they run on something other than a
// yarpc dispatcher. The root package registers the functions at init
// (Register); it cannot be imported from here, as it imports this
// package, so the functions are typed by a parameter, the
// *errown.Middleware.
package adapt

import (
	"github.com/errown/errown/ownership"
	"go.uber.org/config"
	"go.uber.org/yarpc/api/middleware"
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

var (
	take     any // func(M) Parts
	attempts any // func(M) middleware.UnaryOutbound
)

// Register sets the functions Take and Attempts call. The root package
// calls it from its init, once.
func Register[M any](takeFn func(M) Parts, attemptsFn func(M) middleware.UnaryOutbound) {
	if take != nil {
		panic("adapt: registered twice")
	}
	take, attempts = takeFn, attemptsFn
}

// Take returns the Parts of mw and counts mw as wired: once an adapter
// has taken the middleware, an fx application's start does not fail
// with ErrNotWired for want of a dispatcher, nor check that retry
// policies and dependency declarations name services the dispatcher
// calls (the adapter's clients call services errown does not know). An
// adapter calls it when its server or client is built, as fx
// constructors do, not later.
func Take[M any](mw M) Parts {
	return take.(func(M) Parts)(mw)
}

// Attempts returns mw's innermost attempt step (the one
// Middleware.Outbound puts next to the transport), through which an
// adapter runs each physical attempt its client sends, below the
// application's own retries. The step knows a call by the state the
// outbound middleware of Take put in its context. It counts as wiring, as
// Take does.
func Attempts[M any](mw M) middleware.UnaryOutbound {
	return attempts.(func(M) middleware.UnaryOutbound)(mw)
}

// checkConfig is errown's configuration check (errown's checkConfig).
var checkConfig func(p config.Provider, y *config.YAML, files []string) error

// RegisterConfigCheck sets the function CheckConfig calls. The root
// package calls it from its init, once.
func RegisterConfigCheck(f func(p config.Provider, y *config.YAML, files []string) error) {
	if checkConfig != nil {
		panic("adapt: config check registered twice")
	}
	checkConfig = f
}

// CheckConfig reads and validates errown's configuration from the
// application's provider p (or y), files naming the files merged into
// it, as errown's modules do in their first fx invoke, and returns the
// error as it is: an adapter module placed before errown's runs it first,
// so that the application's error leads with errown's message rather than
// fx's account of the *errown.Middleware it could not build.
func CheckConfig(p config.Provider, y *config.YAML, files []string) error {
	return checkConfig(p, y, files)
}
