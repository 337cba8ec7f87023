// Package errowntest holds errown's test helpers for applications that use
// it, with or without fx: a Mesh of real yarpc dispatchers on 127.0.0.1
// to run a service under test among its callers and callees, a Recorder
// of every attempt made on every edge, and NewRequestContext to unit-test
// a handler without a mesh.
//
//   - Mesh starts services (ServiceConfig: a name, a transport, errown's
//     Config, a Handler, its callees), calls them from outside (Mesh.Call,
//     a Reply), and stops them through the test's Cleanup, in the reverse
//     of the order it started them. Mesh.AppOptions joins an fx
//     application under test to the mesh; the rest needs no fx.
//   - Recorder sits innermost on every outbound of a Mesh, below errown's
//     egress and retry middleware, so it sees each attempt as it goes on
//     the wire (Attempt: the attempt number from the attempt header, the
//     code and claim header of the response): a test checks, hop by hop,
//     who retried what and which claim each hop returned.
//   - NewRequestContext gives a handler's unit test a context errown
//     tracks (a Request), and Request.End reads back the Outcome: the
//     claim errown would set on the handler's error, the no-retry signal
//     and the calls recorded.
//
// It imports beside fx's own go.uber.org/fx/fxtest, which runs an fx
// application's lifecycle in a test, without renaming either.
//
// # A mesh
//
// In docs/DESIGN.md's data flow a Mesh stands outside errown: each service
// it starts is a yarpc dispatcher with one inbound (HTTP, gRPC or
// TChannel, on an ephemeral port), errown applied as
// errown.Middleware.Apply applies it, and one outbound per callee over the
// callee's own transport.
//
//	func TestChain(t *testing.T) {
//		mesh := errowntest.NewMesh(t)
//		mesh.Start(errowntest.ServiceConfig{Name: "c", Transport: errowntest.HTTP,
//			Errown: &errown.Config{}, Handler: errowntest.Fail(yarpcerrors.UnavailableErrorf("down"))})
//		mesh.Start(errowntest.ServiceConfig{Name: "b", Transport: errowntest.HTTP,
//			Errown: &errown.Config{Retry: ...}, Callees: []string{"c"}, Handler: errowntest.Forward})
//		reply := mesh.Call(ctx, "b", nil)
//		// reply.Claim == "unclaimed"; mesh.Recorder().Edge("b", "c") holds two attempts.
//	}
//
// An fx application joins with Mesh.AppOptions, beside fx's own fxtest.New
// (see ExampleMesh_AppOptions).
//
// # A handler without a mesh
//
// NewRequestContext is to errown what zaptest.NewLogger is to zap: a
// handler's unit test gives the handler a context errown tracks, as its
// inbound middleware tracks a request it serves, so that
// inbound.DoNotRetry, inbound.CallerFault, outbound.Claim and
// outbound.Record work in it. Request.Called stands in for an outbound
// call made through a fake client. In the data flow it is the ingress log
// alone: no inbound middleware, no egress or retry middleware, no
// dependency memory (edges are of unknown kind unless WithEdgeKind says
// otherwise).
//
//	ctx, req := errowntest.NewRequestContext(t, "orders::create")
//	err := handler.Create(ctx, order)
//	if got := req.End(err); got.Claim != ownership.ClaimUnclaimed { ... }
package errowntest
