// Package fxtest helps test fx applications that use errown: it starts
// small meshes of real yarpc dispatchers on 127.0.0.1, joins the
// application under test to one (Mesh.AppOptions, with fx's own
// go.uber.org/fx/fxtest running its lifecycle), and records every attempt
// made on every edge, so that a test can check, hop by hop, who retried
// what and which claim each hop returned. Import it beside fx's own:
//
//	import (
//		errownfxtest "github.com/errown/errown/fxtest"
//		"go.uber.org/fx/fxtest"
//	)
//
// In docs/DESIGN.md's data flow it stands outside errown: each service a Mesh
// starts is a yarpc dispatcher with one inbound (HTTP, gRPC or TChannel,
// on an ephemeral port), errown applied as errown.Middleware.Apply applies
// it, and one outbound per callee over the callee's own transport. The
// Recorder sits innermost on every outbound, below errown's egress and
// retry middleware, so it sees each attempt as it goes on the wire: the
// attempt number from the attempt header and the code and claim header of
// the response.
//
// The services a Mesh starts itself need no fx; a Mesh stops its dispatchers, in the reverse of
// the order it started them, through the Cleanup of the test it was made
// for.
//
//	func TestChain(t *testing.T) {
//		mesh := fxtest.NewMesh(t)
//		mesh.Start(fxtest.ServiceConfig{Name: "c", Transport: fxtest.HTTP,
//			Errown: &errown.Config{}, Handler: fxtest.Fail(yarpcerrors.UnavailableErrorf("down"))})
//		mesh.Start(fxtest.ServiceConfig{Name: "b", Transport: fxtest.HTTP,
//			Errown: &errown.Config{Retry: ...}, Callees: []string{"c"}, Handler: fxtest.Forward})
//		reply := mesh.Call(ctx, "b", nil)
//		// reply.Claim == "unclaimed"; mesh.Recorder().Edge("b", "c") holds two attempts.
//	}
//
// # A handler without a mesh
//
// NewRequestContext is to errown what zaptest.NewLogger is to zap: a
// handler's unit test gives the handler a context errown tracks, as its
// inbound middleware tracks a request it serves, so that
// inbound.DoNotRetry, inbound.CallerFault, outbound.Claim and
// outbound.Record work in it, and reads back with End the claim errown
// would set on the handler's error, the no-retry signal and the calls
// recorded. Request.Called stands in for an outbound call made through a
// fake client. In the data flow it is the IngressLog alone: no inbound
// middleware, no egress or retry middleware, no dependency memory (edges
// are of unknown kind unless WithEdgeKind says otherwise).
//
//	ctx, req := fxtest.NewRequestContext(t, "orders::create")
//	err := handler.Create(ctx, order)
//	if got := req.End(err); got.Claim != ownership.ClaimUnclaimed { ... }
package fxtest
