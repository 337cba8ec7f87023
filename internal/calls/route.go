package calls

import (
	"slices"
	"sync"

	"go.uber.org/yarpc/yarpcerrors"
)

// _routePeers is how many of the latest peers a Route keeps; attempts are
// few (two by default).
const _routePeers = 3

// Route is the peers one logical call's attempts went to, in order, as a
// peer chooser (package retrypeer) records them, so retries avoid them.
// The retry middleware puts one in each attempt's context of a call it
// may retry (reqlog.NewRouteContext) once such a chooser exists
// (reqlog.ReadRoutes). Never pooled: a transport may hold the context
// after the call. It is safe for concurrent use (hedges).
type Route struct {
	mu    sync.Mutex
	n     int // peers recorded, the latest _routePeers of them kept
	peers [_routePeers]string
	// witness is told each earlier peer when the call is served; or nil.
	witness func(peer string)
	// strict: the next attempt must go to a new peer, or nowhere.
	strict bool
	// avoid are the navoid peers recorded when last made strict: every
	// later attempt, hedges included, goes elsewhere when offered
	// another peer (Avoided).
	avoid  [_routePeers]string
	navoid int
}

// ErrNoOtherPeer is what a Route-reading peer chooser returns when a
// strict attempt (SetStrict) is offered no new peer: the attempt is sent
// nowhere, and errown's retry middleware answers with the shed.
var ErrNoOtherPeer = yarpcerrors.ResourceExhaustedErrorf(
	"errown: not sent: no instance of the callee but the one that shed the call")

// Record adds the peer an attempt went to, ending strict mode.
func (r *Route) Record(peer string) {
	r.mu.Lock()
	r.peers[r.n%_routePeers] = peer
	r.n++
	r.strict = false
	r.mu.Unlock()
}

// SetStrict sets whether the next attempt must go to a new peer or
// nowhere (ErrNoOtherPeer): the retry of an instance's shed. Record ends
// it, so a Route still strict after the attempt sent it nowhere. Setting
// it also makes later attempts avoid the peers so far (Avoided);
// SetStrict(false) keeps that.
func (r *Route) SetStrict(strict bool) {
	r.mu.Lock()
	r.strict = strict
	if strict {
		r.navoid = min(r.n, _routePeers)
		copy(r.avoid[:], r.peers[:r.navoid])
	}
	r.mu.Unlock()
}

// Avoided reports whether peer was recorded when the call was made
// strict: attempts avoid it when offered another.
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

// Witness has fn told, when the latest attempt's peer serves the call
// (Served), each other peer, so the chooser learns which failed a call
// another served.
func (r *Route) Witness(fn func(peer string)) {
	r.mu.Lock()
	r.witness = fn
	r.mu.Unlock()
}

// Served tells the witness, and also if not nil, each recorded peer other
// than the latest, which served the call (an answer included): each
// failed or was slower (a hedge). A one-peer call costs only a lock.
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

// Used reports whether an attempt went to peer (among the latest kept).
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

// Peers appends the kept peers to dst, oldest first.
func (r *Route) Peers(dst []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := max(r.n-_routePeers, 0); i < r.n; i++ {
		dst = append(dst, r.peers[i%_routePeers])
	}
	return dst
}
