package fxtest

import "github.com/errown/errown/internal/testmesh"

// Transports a Mesh can run services on: yarpc's transport names.
const (
	HTTP     = testmesh.HTTP
	GRPC     = testmesh.GRPC
	TChannel = testmesh.TChannel
)

// Transports lists every transport a Mesh supports, for table tests that
// run a scenario over each.
var Transports = []string{HTTP, GRPC, TChannel}
