// Package debugpage serves errown's debug page, an opt-in http.Handler
// usually mounted at /debug/errown: what the dependency memory knows of
// each edge (kind, ratio, samples, source), the retry budget of each
// callee, the instances of a callee that failed calls another instance
// then served (seen through a retrypeer chooser), the latest claim
// decisions, and the latest root requests that met a retry storm below
// ("storms seen": storm radius and requests served with errown beside the
// same figures had every hop retried blind to claims, and the requests
// prevented), under what errown prevented and what users lost since start
// (the requests that failed after this service declined a retry, by
// reason).
//
//	mux.Handle("/debug/errown", debugpage.Handler(mw, "checkout")) // mw: *errown.Middleware
//
// People get HTML; tools get JSON (Page) with ?format=json or an Accept:
// application/json header, its durations as Go duration strings ("10s")
// and a disabled budget as only that (Budget).
//
// It renders what its Source's Introspect returns (errown.Status) and
// changes nothing; *errown.Middleware is a Source. Mount it where the
// service's other debug pages are: it shows internal procedure and
// service names.
package debugpage
