// Package testmesh starts the nodes of errown's test meshes, one way for
// every test, the storm lab and fxtest: a node is a yarpc dispatcher on
// 127.0.0.1 over HTTP, gRPC or TChannel with errown applied as
// errown.Middleware.Apply applies it, or a grpc-go server or a net/http
// server with errown on it through the grpcgo and nethttp adapters.
//
// In docs/DESIGN.md's data flow it stands outside errown, as a user's
// service does: Start builds the node's errown from an errown.Config,
// starts it before the node serves and stops it after the node stopped,
// as errown.Module does through fx. A node listens on an ephemeral port,
// or on the port it is given (a node started again where it crashed).
// What the node serves, whom it calls and what the test records on its
// way in and out are the caller's: handlers, callees and middleware are
// fields of Config.
//
// Endpoint builds the yarpc transports of one dispatcher, at most one of
// each kind, with the inbound and the outbounds a node or a client needs.
package testmesh
