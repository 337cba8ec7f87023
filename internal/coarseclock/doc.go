// Package coarseclock is the clock errown's hot paths read: the retry
// budgets on every outbound call, the dependency memory on every failed
// one. Between Start and Stop a goroutine reads the real clock every tick
// and keeps the reading in an atomic, so that a request loads an int64
// rather than reading the clock, which costs tens of nanoseconds (figures
// in bench/README.md); before Start and after Stop every reading is exact.
//
// In docs/DESIGN.md's data flow it is under the retry middleware's budget
// and the dependency memory's window; errown.Middleware's Start and Stop
// run its goroutines.
package coarseclock
