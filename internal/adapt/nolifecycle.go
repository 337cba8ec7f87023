package adapt

import "go.uber.org/yarpc/api/transport"

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
