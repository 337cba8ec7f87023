// Package retrypeer sends errown's retries to another instance of the
// callee: a peer.Chooser that wraps the outbound's own (yarpc's round
// robin, pending-heap, two-random-choices or any other list) and, for a
// retry of a call errown's retry middleware sends, skips the peers that
// earlier attempts of the same call went to, Envoy's previous_hosts retry
// host predicate in yarpc's terms.
//
// In docs/DESIGN.md's data flow it sits in the transport, below the retry
// middleware: the retry middleware puts the call's route (the peers its
// attempts went to) in the context of each attempt of a call it may
// retry, and the chooser reads it when the outbound asks for a peer. A
// first attempt, and any call errown does not retry, goes where the
// inner chooser says. When the inner chooser offers no other peer (one
// instance, or every one already tried), the retry goes to the one it
// offers: a single-instance outbound retries on its one instance.
//
// Use it for every outbound whose callee runs several instances:
//
//	list := roundrobin.New(httpTransport) // go.uber.org/yarpc/peer/roundrobin
//	chooser := yarpcpeer.Bind(list, yarpcpeer.BindPeers(ids)) // yarpcpeer: go.uber.org/yarpc/peer
//	out := httpTransport.NewOutbound(retrypeer.New(chooser))
package retrypeer
