package inbound

// Losses is what a service's failed requests lost where it declined a
// retry, beside what errown prevented below its root requests, since its
// middleware started: the totals of inbound.failed_after_denied,
// storm.prevented and storm.requests, for operators (the debug page).
type Losses struct {
	// Lost is inbound.failed_after_denied by reason, the reasons with a
	// request only, in a fixed order: the refusals (retry.denied's
	// reasons), then "unclaimed" and "attempt-limit". A request is
	// counted once per reason.
	Lost []Lost `json:"lost"`
	// Prevented is storm.prevented, over every root procedure: the
	// requests errown's suppressed retries did not cause below this
	// service's root requests (observe mode: would not cause).
	Prevented uint64 `json:"prevented"`
	// StormRequests is storm.requests, over every root procedure: the
	// root requests that met a storm below. It is not the requests that
	// failed (docs/storm-telemetry.md, "What users lost").
	StormRequests uint64 `json:"stormRequests"`
}

// Lost is how many requests failed (a server fault) after this service
// declined to retry one of their failed calls, for one Reason: a refusal
// ("budget", "deadline", "pushback", "not-idempotent", "code",
// "body-too-large", "overload"), "unclaimed" (the callee's error was
// unclaimed while the policy would have retried it) or "attempt-limit"
// (the policy's last attempt failed).
type Lost struct {
	Reason   string `json:"reason"`
	Requests int64  `json:"requests"`
}
