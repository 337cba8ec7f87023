package tracing

// The tags errown sets on a server span, the events it logs on a caller's
// span and their fields: docs/tracing.md names them all.
const (
	// Tags of a server span.
	TagClaim          = "errown.claim"        // claimed or unclaimed, on an error response
	TagClaimReason    = "errown.claim.reason" // inbound.Decision.Reason: why
	TagAttempt        = "errown.attempt"      // on a request that is a retry: its attempt number
	TagStormKnown     = "errown.storm.known"  // false on a root whose figures are unknown
	TagStormServed    = "errown.storm.served"
	TagStormBlind     = "errown.storm.blind"
	TagStormPrevented = "errown.storm.prevented"
	TagStormRetries   = "errown.storm.retries"
	TagStormRadius    = "errown.storm.radius"
	TagStormBlindRad  = "errown.storm.blind_radius"
	TagShed           = "errown.shed" // on a request admission shed (or, in observe mode, would have): the reason

	// Events on the caller's span, one per retry decision.
	EventRetry   = "errown.retry"
	EventRefused = "errown.retry_refused"

	// Fields of the events.
	FieldAttempt   = "errown.attempt" // retry: the attempt sent; refusal: the attempt that failed
	FieldBackoff   = "errown.backoff" // retry: the wait before it, as a Go duration
	FieldCallee    = "errown.callee"
	FieldProcedure = "errown.procedure"
	FieldClaim     = "errown.claim"   // the claim on the failed attempt's response
	FieldReason    = "errown.reason"  // refusal: unclaimed, budget, deadline, pushback, ...
	FieldForeign   = "errown.foreign" // reason foreign: the rule, e.g. foreign-unclaimed
	FieldMode      = "errown.mode"    // observe, in observe mode only
	FieldPeer      = "errown.peer"    // the failed attempt's peer, where a retrypeer chooser recorded it

	// TagResendCount is OpenTelemetry's HTTP attribute, set on a client
	// span errown resent the request of.
	TagResendCount = "http.request.resend_count"
)

// Values of the fields.
const (
	ModeObserve     = "observe"
	ReasonUnclaimed = "unclaimed"
	ReasonForeign   = "foreign"
)
