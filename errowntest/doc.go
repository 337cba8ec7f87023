// Package errowntest holds errown's test helpers for applications that use
// it, with or without fx: a Mesh of real yarpc dispatchers on 127.0.0.1
// to run a service under test among its callers and callees, a Recorder
// of every attempt made on every edge, and NewRequestContext to unit-test
// a handler without a mesh.
//
//   - Mesh starts services (ServiceConfig), calls them from outside
//     (Mesh.Call, a Reply), and stops them in reverse order through the
//     test's Cleanup. Mesh.AppOptions joins an fx application under test
//     to the mesh; the rest needs no fx.
//   - Recorder sits innermost on every outbound of a Mesh, so it sees each
//     attempt as it goes on the wire (Attempt): a test checks, hop by hop,
//     who retried what and which claim each hop returned.
//   - NewRequestContext gives a handler's unit test a context errown
//     tracks, and Request.End reads back the Outcome.
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
// NewRequestContext is to errown what zaptest.NewLogger is to zap: it
// gives a handler a context errown tracks, so that inbound.DoNotRetry,
// inbound.CallerFault, outbound.Claim and outbound.Record work in it, and
// Request.Called stands in for a call made through a fake client. It is
// the ingress log alone: no middleware and no dependency memory (edges
// are of unknown kind unless WithEdgeKind says otherwise).
//
//	ctx, req := errowntest.NewRequestContext(t, "orders::create")
//	err := handler.Create(ctx, order)
//	if got := req.End(err); got.Claim != ownership.ClaimUnclaimed { ... }
package errowntest
