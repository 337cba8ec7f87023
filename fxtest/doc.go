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
package fxtest
