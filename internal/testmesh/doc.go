// Package testmesh starts the nodes of errown's test meshes, one way for
// every test, the storm lab and fxtest: a node is a yarpc dispatcher on
// 127.0.0.1 over HTTP, gRPC or TChannel with errown applied as
// errown.Middleware.Apply applies it, or a grpc-go or net/http server with
// errown on it through the grpcgo and nethttp adapters.
//
// It stands outside errown, as a user's service does: Start builds the
// node's errown from an errown.Config, starts it before the node serves
// and stops it after, as errown.Module does through fx. A node listens on
// an ephemeral port, or on a given one (restarting where it crashed).
// Handlers, callees and middleware are fields of Config. Endpoint builds
// one dispatcher's yarpc transports.
package testmesh
