// Package peers measures errown beside what a team would pick instead: a
// retry middleware on github.com/cenkalti/backoff/v5 and failsafe-go's
// retry policy (in its budget, and with its adaptive limiter), on yarpc's
// in-process chain and on a 3-node HTTP chain, against bare yarpc and a
// middleware that does nothing, in one process, taking turns. It is a
// module of its own so that these libraries stay out of errown's go.mod.
// It has no code of its own; see ../README.md for the figures and how to
// reproduce them.
package peers
