// Package debugpage serves errown's debug page, an opt-in http.Handler
// usually mounted at /debug/errown: the dependency memory's edges, the
// retry budgets, the instances that failed calls another instance then
// served (through a retrypeer chooser), the latest claim decisions and
// root storms, and what errown prevented and users lost since start.
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
