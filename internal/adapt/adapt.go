// Package adapt gives errown's own adapters, grpcgo and nethttp, the
// parts of an *errown.Middleware they run on something other than a
// yarpc dispatcher. The root package's methods that return them take a
// Token, which only errown's own packages can make (this package is
// internal), so they are not API for anyone else.
package adapt

import (
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/api/middleware"
)

// Token is the argument of the root package's methods for errown's
// adapters: Middleware.AdapterParts, Middleware.AdapterAttempts and
// AdapterConfigCheck.
type Token struct{}

// Parts are what an adapter runs of a Middleware: the unary inbound and
// outbound middleware (those of Middleware.Inbound and
// Middleware.Outbound) and the header names of the Config the Middleware
// was built from, which the adapter reads on its own wire.
type Parts struct {
	Inbound  middleware.UnaryInbound
	Outbound middleware.UnaryOutbound
	Headers  ownership.Headers
}
