// Package e2e holds errown's end-to-end tests, and nothing else: small
// meshes of real yarpc dispatchers on 127.0.0.1 (package fxtest), each
// scenario of docs/DESIGN.md run over HTTP, gRPC and TChannel, asserting hop by
// hop how often each node served, which attempts went over each edge and
// which claim each hop returned.
package e2e
