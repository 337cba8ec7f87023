package calls

import "sync"

// _routePeers is how many peers a Route remembers: the latest ones. A
// call's attempts are few (two by default); one that makes more avoids
// the peers of its latest attempts.
const _routePeers = 3

// Route is the peers (instances) one logical call's attempts went to, in
// order, as a peer chooser that reads it (package retrypeer) recorded
// them: a retry of the call avoids them. The retry middleware puts it in
// the context of every attempt of a call it may retry (reqlog.NewRouteContext),
// once such a chooser exists in the process (reqlog.ReadRoutes);
// it is allocated per call, never pooled, since a transport may hold an
// attempt's context after the call returned. It is safe for concurrent
// use (a hedge chooses while another attempt of the call is under way).
type Route struct {
	mu    sync.Mutex
	n     int // peers recorded, the latest _routePeers of them kept
	peers [_routePeers]string
}

// Record adds the identifier of the peer an attempt of the call went to.
func (r *Route) Record(peer string) {
	r.mu.Lock()
	r.peers[r.n%_routePeers] = peer
	r.n++
	r.mu.Unlock()
}

// Used reports whether an attempt of the call went to peer (among the
// latest ones recorded).
func (r *Route) Used(peer string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range min(r.n, _routePeers) {
		if r.peers[i] == peer {
			return true
		}
	}
	return false
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
