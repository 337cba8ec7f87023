// Package debugpage serves errown's debug page, an opt-in http.Handler
// usually mounted at /debug/errown: what the dependency memory knows of
// each edge (kind, ratio, samples, source), the retry budget of each
// callee, the latest claim decisions, and the latest root requests that
// met a retry storm below ("storms seen": storm radius and requests served
// with errown beside the same figures had every hop retried blind to
// claims, and the requests prevented). People get HTML; tools get JSON
// with ?format=json or an Accept: application/json header, its durations
// as Go duration strings ("10s") and a disabled budget as only that
// (Budget).
//
// It reads only what errown's Middleware exposes (Dependencies, Budgets,
// Decisions, Storms) and changes nothing. Mount it where the service's
// other debug pages are: it shows internal procedure and service names.
package debugpage
