// Command quickstart is the README's quick start: checkout, a yarpc
// service over HTTP whose calls to payments errown retries by the one
// policy in config.yaml, reporting errown's metrics to a tally Scope that
// Prometheus reads at /metrics on checkout's port (127.0.0.1:8080/metrics).
// main.go and config.yaml are the README's two
// blocks of code, character for character (readme_test.go holds them
// together); main_test.go runs the service against a failing payments.
//
//	cd examples/quickstart && go run .
package main
