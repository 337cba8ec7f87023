package ownership

// Edge names a dependency as one caller procedure sees it: the same callee
// can be a hard dependency on one route and a soft one on another.
type Edge struct {
	// CallerProcedure is the inbound procedure of the calling service that
	// made the call.
	CallerProcedure string `json:"callerProcedure" yaml:"callerProcedure"`
	// Service is the callee service.
	Service string `json:"service" yaml:"service"`
	// Procedure is the callee procedure.
	Procedure string `json:"procedure" yaml:"procedure"`
}

// String returns "callerProcedure->service::procedure".
func (e Edge) String() string {
	return e.CallerProcedure + "->" + e.Service + "::" + e.Procedure
}
