// Package bench holds errown's benchmarks of the request path, each
// compared in the same run with a baseline: plain yarpc for the middleware
// chain, a single-mutex map and sync.Map for the ingress log. It has no
// code of its own; see bench/README.md and docs/performance.md for the
// figures and how to reproduce them.
package bench
