// Command quickstart is the README's quick start: checkout, a yarpc
// service over HTTP whose calls to payments errown retries by the one
// policy in config.yaml. main.go and config.yaml are the README's two
// blocks of code, character for character (readme_test.go holds them
// together); main_test.go runs the service against a failing payments.
//
//	cd examples/quickstart && go run .
package main
