package calls

import "sync/atomic"

// Orphans counts failed outbound calls no request could be tied to (made
// with a fresh context): a request in flight meanwhile has unknown storm
// figures, as the failure may be its own. One errown's egress and inbound
// middleware share it (egress.WithOrphans, ingress.WithOrphans).
//
// It also counts marked requests in flight: while there are any, egress
// marks orphan calls too, so their callees report subtree figures.
type Orphans struct {
	_ [64]byte // alone in its cache block: every request reads it
	n atomic.Uint64
	_ [56]byte
	// watched is written only by marked requests (an incident's).
	watched atomic.Int64
	_       [56]byte
}

// Watch counts a marked request in flight, until Unwatch.
func (o *Orphans) Watch() { o.watched.Add(1) }

// Unwatch ends what Watch began.
func (o *Orphans) Unwatch() { o.watched.Add(-1) }

// Watched reports whether a marked request is in flight.
func (o *Orphans) Watched() bool { return o.watched.Load() > 0 }

// Failed counts one orphan failure.
func (o *Orphans) Failed() { o.n.Add(1) }

// Mark returns a mark to compare with Since at the end of a request.
func (o *Orphans) Mark() uint64 { return o.n.Load() }

// Since reports whether an orphan failed since mark.
func (o *Orphans) Since(mark uint64) bool { return o.n.Load() != mark }
