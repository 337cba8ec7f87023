// Package errown stops retry storms in yarpc service meshes by giving every
// error an owner.
//
// The service where a failure began claims the error; its direct caller may
// retry it; every layer above sees the error as unclaimed and does not
// retry again. Add Module to an fx application that provides a
// yarpc.Config (Grouped where another library decorates yarpc.Config too),
// or build the middleware with New and Apply it to a yarpc.Config by hand.
// Start fails when errown's middleware reached no dispatcher: errown is
// never silently off. Nor does its configuration silently do nothing: a
// misspelled errown key, a retry policy for a service the dispatcher does
// not call, or a zero written where it would mean a default fails start
// with the fix. docs/DESIGN.md in the repository is the design and
// its decision tables; docs/configuration.md has the configuration reference.
package errown
