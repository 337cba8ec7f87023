package nolifecycle

import "go.uber.org/yarpc/api/transport"

// Outbound gives the type that embeds it the Start, Stop, IsRunning and
// Transports methods of a transport.UnaryOutbound: always running, with
// nothing to start or stop and no transport of its own.
type Outbound struct{}

// Start implements transport.Lifecycle: there is nothing to start.
func (Outbound) Start() error { return nil }

// Stop implements transport.Lifecycle: there is nothing to stop.
func (Outbound) Stop() error { return nil }

// IsRunning implements transport.Lifecycle: always.
func (Outbound) IsRunning() bool { return true }

// Transports implements transport.Outbound: none.
func (Outbound) Transports() []transport.Transport { return nil }
