// Package retrypeer sends errown's retries to another instance of the
// callee: a peer.Chooser that wraps the outbound's own (yarpc's round
// robin, pending-heap, two-random-choices or any other list) and, for a
// retry of a call errown's retry middleware sends, skips the peers that
// earlier attempts of the same call went to, Envoy's previous_hosts retry
// host predicate in yarpc's terms. It also passes over, once, an instance
// that failed a call another instance then served, so that first attempts
// do not take the turns on a failing instance that the retries avoid.
//
// In docs/DESIGN.md's data flow it sits in the transport, below the retry
// middleware, which puts the call's route (the peers its attempts went
// to) in each attempt's context and, once the call is served, tells the
// route, so the chooser learns which instances failed a call another one
// served. Each such failure has the instance passed over once, by the
// next first attempt it is offered to (when the whole callee fails no
// call is served, and none is passed over). Calls errown does not retry
// go where the inner chooser says. When the inner chooser offers no other
// peer, the retry goes to the one it offers; but the retry of an
// instance's shed goes only to another instance, and offered none, the
// call fails with the shed.
//
// The same evidence is kept for operators (errown.Middleware.Instances,
// the debug page's "Instances that failed calls another served").
//
// Use it for every outbound whose callee runs several instances:
//
//	list := roundrobin.New(httpTransport) // go.uber.org/yarpc/peer/roundrobin
//	chooser := yarpcpeer.Bind(list, yarpcpeer.BindPeers(ids)) // yarpcpeer: go.uber.org/yarpc/peer
//	out := httpTransport.NewOutbound(retrypeer.New(chooser))
package retrypeer
