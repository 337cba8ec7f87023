// Package retrier is errown's unary outbound retry middleware
// (Middleware), which package retry configures and errown.New builds: the
// policies, retry budgets, overload limit and modes of retry.Config, and
// the innermost attempt step that holds every attempt leaving the process
// to the same rules.
//
// In docs/DESIGN.md's data flow it is the inner of the two outbound
// middlewares: the egress middleware (package internal/egress) wraps it
// and reads from the call's Result (Run) how many attempts were made and
// why a wanted retry was refused. The call's state (CallState) is this
// package's alone: the retry loop and the innermost step are its only
// writers. The rules it retries by and the
// metrics it emits are listed in package retry's documentation.
package retrier
