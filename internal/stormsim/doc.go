// Package stormsim is errown's storm lab: it reproduces the retry-storm
// figures of docs/DESIGN.md on real yarpc dispatchers, and computes what they
// should be.
//
// A Topology is a call graph of services (a chain, a tree or a DAG) read
// from YAML: which node calls which, how many times per request, which
// edges are soft (the caller ignores the child's failure), which nodes
// fail and with what probability, which run errown and which have a retry
// policy, which lose their request context, which hang (never answer),
// and the per-attempt timeout of each call. Chain builds the straight
// chain of docs/DESIGN.md's first table; the scenarios' topologies are shipped
// in topologies/ (LoadTopology).
//
// Run builds a topology of services, each its own yarpc.Dispatcher on
// 127.0.0.1 with an ephemeral port, over HTTP, gRPC or TChannel, raw
// encoding, one procedure; or each a plain grpc-go or net/http server
// calling its children through grpc-go ClientConns or http.Clients,
// errown on them through packages grpcgo and nethttp (TransportGRPCGo,
// TransportNetHTTP), or a mix of the three kinds (TransportMixed). Every node counts the requests it serves, calls
// its children with the request's path and then fails with its own
// probability (after calling the nodes below it, as in docs/DESIGN.md),
// otherwise passes on the error of its first failed hard call, if any. A
// node's failures are draws of a random source seeded by the run's seed
// and the request's path from the root, so a run fails the same requests
// whatever the interleaving.
//
// Every hop is configured alike, under one Policy:
//
//   - naive: a retrier.Middleware on every outbound, Attempts attempts, no
//     budget;
//   - budget: the same with a retry budget of the given ratio and no
//     per-second floor, over a window longer than the run;
//   - ownership: the full errown middleware (errown.New and Apply) with
//     the same retry policy and budget;
//   - ownership-naive: errown with naive's unbudgeted retries.
//
// A node that runs no errown under the ownership policies retries with
// package retry blind to claims, as any retry library. A hop blind to
// claims (naive, budget, or a node without errown) times out each attempt
// below its retry middleware, as a retry library that knows nothing of
// errown: it starts a retry whenever the deadline leaves retry's
// minRemaining. Under errown the per-attempt timeout is the hop's
// retry.PolicyConfig.AttemptTimeout, and a retry starts only when a whole
// attempt fits in the deadline left (docs/DESIGN.md, "Overload and
// timeouts"). Each node's
// innermost outbound middleware sees every attempt and records the retries
// (attempt header 2 or later) by root request, logical call and hop, for
// the retry storm radius: for each failed root request, the largest number
// of hops on one call path (root → ... → leaf) over which a retry was spent
// on it; retries on sibling paths do not add up. Its outermost inbound
// middleware counts its errors by claim.
//
// The simulator's own client calls the root without retrying, N times with
// bounded concurrency, and reports how many requests each node served per
// root request, and the most it served on one call path of one root
// request (every attempt that reached it along that path); on request it
// traces every attempt of one root request. Analyze computes the same
// figures without running anything, from a model of the same mechanism;
// Expected gives them for a chain. The model does not follow time: for a
// topology with a hanging node or per-attempt timeouts the figures are
// measured only (Analysis.MeasuredOnly).
//
// Under open-loop load (Options.Rate, or rate: in the topology) root
// requests arrive as a Poisson process drawn from the seed, whatever
// became of the earlier ones, each with its deadline. A node may have a
// finite capacity (workers that each spend a service time per request,
// behind a bounded FIFO queue that answers resource-exhausted when full),
// and serve or drop the queued requests whose caller has gone
// (abandoned: serve or leave); and a timeline of triggers (its service
// time multiplied, every call failed, or a crash and restart of its
// dispatcher on the same port). The run reports, per bin of time, the
// root's goodput, the constrained node's arrivals, queue and abandoned
// work, and the retries sent and refused by reason (the nodes' own
// retry.denied counters), and the time from the last trigger's end until
// the goodput recovered (Timeline, Recovery). Arms (CapacityArms) are the
// mechanisms the capacity scenario compares: no retries, every hop
// retrying, a budget, client-side adaptive throttling (Throttle, a yarpc
// outbound middleware), failsafe-go (Failsafe with Server: its adaptive
// limiter on every node's inbound too), errown in enforce and observe
// mode; an arm's Errown option changes errown's configuration.
//
// A node may run several instances (instances: N), each its own
// dispatcher with its own errown, budget and capacity, which its callers
// reach through a yarpc peer list (peerList: round-robin, the default;
// fewest-pending, yarpc's pendingheap, whose fast-failing instance
// attracts traffic; two-random-choices; random). A partial failure is
// faulty: k (the first k instances have the node's fail or hang, the
// others are healthy) or a trigger's instances: k (k of N slow down, fail,
// or crash and restart). The partial scenario (PartialScenario,
// PartialArms) compares its arms under one bad instance of three: no
// retries, every hop retrying, a 10% budget, failsafe-go (Failsafe, its
// retry policy, budget and adaptive limiter as a yarpc outbound
// middleware), errown with retrypeer's chooser (Options.Chooser), errown
// in observe mode; the model has no figures for partial topologies.
//
// A Scenario (Scenarios, LookupScenario) runs shipped topologies under
// several policies and reports its headline figures beside docs/DESIGN.md's
// published ones, each judged within a stated tolerance; a Report draws
// its loads as an SVG Chart.
//
// In docs/DESIGN.md's data flow stormsim sits outside errown: it is a user of
// the root package and of packages retry and depmem, a tool and an
// end-to-end check.
package stormsim
