// Package retrier is errown's unary outbound retry middleware
// (Middleware), which package retry configures and errown.New builds: the
// policies, retry budgets, overload limit and modes of retry.Config, and
// the innermost attempt step that holds every attempt leaving the process
// to the same rules.
//
// It is the inner of the two outbound middlewares (docs/DESIGN.md): the
// egress middleware (internal/egress) wraps it and reads the call's Result
// (Run): attempts made and why a retry was refused. CallState's only
// writers are the retry loop and the innermost step. The rules and
// metrics are documented in package retry.
package retrier
