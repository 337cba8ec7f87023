// Package errown stops retry storms in yarpc service meshes by giving every
// error an owner.
//
// The service where a failure began claims the error; its direct caller may
// retry it; every layer above sees the error as unclaimed and does not
// retry again. A failing service three hops down gets about 1.1 times its
// load rather than 2³. errown also measures, on the application's own
// traffic, the storms it prevents (observe mode shows them before it
// prevents any).
//
// This package holds errown's fx modules and its configuration; the
// packages beside it configure each part (see Packages below).
// docs/DESIGN.md in the repository is the design and its decision tables.
//
// # With fx
//
// Add Module to an fx application that builds its yarpc dispatcher from a
// provided yarpc.Config: it decorates the yarpc.Config with errown's
// middleware, reads the "errown" section of the application's
// config.Provider, logs to its *zap.Logger and reports to its tally Scope,
// and starts and stops with the application:
//
//	fx.New(
//		fx.Provide(newConfig, zap.NewProduction, newYARPCConfig, newDispatcher),
//		errown.Module,
//		fx.Invoke(register),
//	).Run()
//
// Where another library decorates yarpc.Config too, use Grouped, which
// contributes errown's middleware to the "yarpc.unary_inbound" and
// "yarpc.unary_outbound" value groups for the dispatcher constructor to
// chain (ChainInbound, ChainOutbound). An application serving grpc-go or
// net/http places Core, which provides *Middleware alone, beside
// grpcgo.Module or nethttp.Module.
//
// # Without fx
//
// New builds the middleware from a Config; Apply puts it on a yarpc.Config;
// Start and Stop run its background work (snapshots, fleet queries, gauges,
// the budgets' clock) around the dispatcher's life:
//
//	cfg, err := errown.ConfigFromYAML(yamlBytes) // or a Config literal
//	mw, err := errown.New(cfg, errown.WithLogger(logger), errown.WithScope(scope))
//	if err := mw.Start(); err != nil { ... }
//	defer mw.Stop()
//	d := yarpc.NewDispatcher(mw.Apply(yarpc.Config{Name: "checkout", ...}))
//
// # Configuration
//
// Config is the "errown" section of the YAML; every key is optional, and
// without a retry policy errown never retries:
//
//	errown:
//	  mode: enforce                # or observe: claims and telemetry, retries as without errown
//	  retry:
//	    policies:
//	      - service: payments      # the outbound's service name
//	        maxAttempts: 2         # the first attempt and one retry
//	        idempotent: true       # required: the procedure is safe to send again
//
// Its sections are configured by the packages beside this one (ownership,
// inbound, outbound, retry, depmem). Each field's comment states its
// default; docs/configuration.md lists every key.
//
// In Go, a field of Config left zero means its default, as in yarpc's and
// grpc-go's option structs, so Config{} runs as DefaultConfig(). A zero
// meant as zero is written with its switch (NoFloor, NoHysteresis) or as
// the least value (MaxAttempts: 1).
//
// Configuration never silently does nothing: a misspelled key or a value
// of the wrong type fails with an error naming the key and the value; a
// retry policy or dependency declaration for a service the dispatcher
// does not call fails start (ErrUnknownService), and so does a policy that
// retries through a peer list its retries cannot leave
// (ErrRetriesNotSteered: wrap the list in retrypeer.New). ConfigFiles
// names the YAML files of an application's config.Provider, so that those
// errors name the file too.
//
// # Starting
//
// Start fails when errown's middleware reached no dispatcher, server or
// client (ErrNotWired): errown is never silently off. Config.Wiring
// chooses: "require" (the default) fails start, "warn" logs and starts,
// "strict" fails too without a metrics scope (ErrNoMetrics).
//
// # On the wire
//
// errown reads and writes application headers (their names in
// ownership.Headers): on an error response the claim (errown-claim:
// claimed or unclaimed) and the storm figures (errown-storm); on a retry
// the attempt number (errown-attempt: 2, 3, ...); a callee asks not to be
// retried with errown-no-retry: true (inbound.DoNotRetry). In the steady
// state, outside an incident, none of errown's headers is on the wire.
//
// # Metrics and operators' views
//
// Metrics go to a sub-scope "errown" of the scope errown is given: the
// application's tally v4 Scope, or else yarpc's own tally v3 Scope.
// Packages inbound, outbound, retry and depmem list each part's counters;
// docs/metrics.md has them all. Middleware.Introspect's Status is what the
// debug page (package debugpage) shows.
//
// # Packages
//
//   - ownership: errown's vocabulary: claims, edge kinds, storm figures,
//     the code table, the header names.
//   - inbound, outbound, retry, depmem: each part's configuration, the
//     helpers a handler calls, and the operators' view types.
//   - retrypeer: a peer.Chooser that sends retries to another instance.
//   - grpcgo, nethttp: errown for grpc-go and net/http servers and clients.
//   - debugpage: the operators' debug page.
//   - errowntest: helpers to test applications that use errown.
package errown
