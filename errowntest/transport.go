package errowntest

// Transports a Mesh can run services on: yarpc's transport names.
const (
	HTTP     = "http"
	GRPC     = "grpc"
	TChannel = "tchannel"
)
