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
// middleware: the retry middleware puts the call's route (the peers its
// attempts went to) in the context of each attempt of a call it may
// retry, and the chooser reads it when the outbound asks for a peer; once
// the call is served, the retry middleware tells the route, and the
// chooser learns which instances failed a call another one served. A
// first attempt of a call errown may retry goes where the inner chooser
// says, unless that is such an instance: each call it failed so has it
// passed over once, by the next call it is offered to (when the whole
// callee fails no call is served, and no instance is passed over). Any
// call errown does not retry goes where the inner chooser says. When the inner chooser offers no other peer (one
// instance, or every one already tried), the retry goes to the one it
// offers: a single-instance outbound retries on its one instance. The
// retry of an instance's shed (its admission's answer, marked by the
// shed header) is the exception: the retry middleware sends it once, and
// only to another instance; offered none, the chooser sends it nowhere
// and the call fails with the shed.
//
// The retry middleware keeps the same evidence for operators: the
// instances of each callee that failed calls another instance then
// served, with how many and when last (errown.Middleware.Instances, the
// debug page's "Instances that failed calls another served"). Only a
// call served after an attempt on another peer adds to it.
//
// Use it for every outbound whose callee runs several instances:
//
//	list := roundrobin.New(httpTransport) // go.uber.org/yarpc/peer/roundrobin
//	chooser := yarpcpeer.Bind(list, yarpcpeer.BindPeers(ids)) // yarpcpeer: go.uber.org/yarpc/peer
//	out := httpTransport.NewOutbound(retrypeer.New(chooser))
package retrypeer
