package errowntest

// Transports a Mesh can run services on: yarpc's transport names.
const (
	HTTP     = "http"
	GRPC     = "grpc"
	TChannel = "tchannel"
)

// Transports lists every transport a Mesh supports, for table tests that
// run a scenario over each.
var Transports = []string{HTTP, GRPC, TChannel}
