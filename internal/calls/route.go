package calls

import (
	"slices"
	"sync"

	"go.uber.org/yarpc/yarpcerrors"
)

// _routePeers is how many peers a Route remembers: the latest ones. A
// call's attempts are few (two by default); one that makes more avoids
// the peers of its latest attempts.
const _routePeers = 3

// Route is the peers (instances) one logical call's attempts went to, in
// order, as a peer chooser (package retrypeer) recorded them: a retry of
// the call avoids them. The retry middleware puts one in the context of
// every attempt of a call it may retry (reqlog.NewRouteContext), once such
// a chooser exists (reqlog.ReadRoutes); never pooled, since a transport
// may hold an attempt's context after the call returned. It is safe for
// concurrent use (a hedge chooses while another attempt is under way).
type Route struct {
	mu    sync.Mutex
	n     int // peers recorded, the latest _routePeers of them kept
	peers [_routePeers]string
	// witness is told, when the call is served (Served), each peer its
	// earlier attempts went to; nil for none.
	witness func(peer string)
	// strict says the next attempt must go to a peer no earlier attempt
	// went to, or nowhere (SetStrict).
	strict bool
	// avoid are the peers recorded when the call was last made strict
	// (navoid of them): every later attempt of the call, a hedge of the
	// strict one included, goes elsewhere whenever it is offered another
	// peer (Avoided).
	avoid  [_routePeers]string
	navoid int
}

// ErrNoOtherPeer is what a peer chooser that reads Routes (package
// retrypeer) returns for an attempt that must avoid every peer the
// call's earlier attempts went to (SetStrict) when it is offered none
// other: the attempt is sent nowhere. errown's retry middleware, whose
// retry of an instance's shed it is, answers the call with the shed.
var ErrNoOtherPeer = yarpcerrors.ResourceExhaustedErrorf(
	"errown: not sent: no instance of the callee but the one that shed the call")

// Record adds the identifier of the peer an attempt of the call went to:
// the choice SetStrict asked for, if any, is made.
func (r *Route) Record(peer string) {
	r.mu.Lock()
	r.peers[r.n%_routePeers] = peer
	r.n++
	r.strict = false
	r.mu.Unlock()
}

// SetStrict sets whether the call's next attempt must go to a peer none
// of its earlier attempts went to, or nowhere (ErrNoOtherPeer): the retry
// of an instance's shed. Record ends it: a Route still strict after the
// attempt came back sent it nowhere. Setting it also has every later
// attempt avoid the peers recorded so far whenever offered another
// (Avoided); SetStrict(false) leaves that as it is.
func (r *Route) SetStrict(strict bool) {
	r.mu.Lock()
	r.strict = strict
	if strict {
		r.navoid = min(r.n, _routePeers)
		copy(r.avoid[:], r.peers[:r.navoid])
	}
	r.mu.Unlock()
}

// Avoided reports whether peer is one the call's attempts avoid
// whenever offered another: recorded when the call was made strict
// (SetStrict).
func (r *Route) Avoided(peer string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.avoid[:r.navoid], peer)
}

// Strict reports whether the call's next attempt must avoid every peer
// recorded (SetStrict).
func (r *Route) Strict() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.strict
}

// Witness has fn told, when the call is served by the peer of its latest
// attempt (Served), each other peer its attempts went to: the chooser
// that records the call's peers learns which of them failed a call
// another one served.
func (r *Route) Witness(fn func(peer string)) {
	r.mu.Lock()
	r.witness = fn
	r.mu.Unlock()
}

// Served tells the witness (Witness) and also, if not nil, each peer
// recorded other than the latest attempt's, which served the call (an
// answer included): each failed it, or was slower (a hedge). A call whose
// attempts all went to one peer costs a lock and nothing else.
func (r *Route) Served(also func(peer string)) {
	r.mu.Lock()
	fn, n := r.witness, min(r.n, _routePeers)
	var others [_routePeers]string
	k := 0
	if (fn != nil || also != nil) && n > 1 {
		last := r.peers[(r.n-1)%_routePeers]
		for i := range n {
			if p := r.peers[i]; p != last && !slices.Contains(others[:k], p) {
				others[k] = p
				k++
			}
		}
	}
	r.mu.Unlock()
	for _, p := range others[:k] {
		if fn != nil {
			fn(p)
		}
		if also != nil {
			also(p)
		}
	}
}

// Used reports whether an attempt of the call went to peer (among the
// latest ones recorded).
func (r *Route) Used(peer string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.peers[:min(r.n, _routePeers)], peer)
}

// Len returns how many attempts of the call a peer was recorded for.
func (r *Route) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Last returns the peer the call's latest recorded attempt went to, or "".
func (r *Route) Last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return ""
	}
	return r.peers[(r.n-1)%_routePeers]
}

// Peers appends to dst the peers recorded, oldest first (the latest
// _routePeers of them), and returns it.
func (r *Route) Peers(dst []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := max(r.n-_routePeers, 0); i < r.n; i++ {
		dst = append(dst, r.peers[i%_routePeers])
	}
	return dst
}
