// Package nolifecycle is the lifecycle of an outbound that has none.
// errown's grpc-go and net/http adapters (packages grpcgo and nethttp)
// hand errown's outbound middleware a transport.UnaryOutbound per call or
// per attempt: in docs/DESIGN.md's data flow, the last step before the
// network. Such an outbound is never started or stopped; it embeds
// Outbound for the methods that say so.
package nolifecycle
