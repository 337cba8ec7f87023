package calls

import "sync/atomic"

// Orphans counts the failed outbound calls that no request could be tied
// to (a handler that called with a fresh context): the storm of a request
// in flight while one failed is unknown, since the failure may be one of
// its own calls, out of errown's sight. The egress and inbound middleware
// of one errown share it (egress.WithOrphans, ingress.WithOrphans).
//
// It also counts the requests in flight that came marked (their caller
// reads their figures): while there are any, the egress middleware marks
// an orphan call too, so that its callee answers with its subtree's
// figures and a quiet subtree of several requests is not taken for one.
type Orphans struct {
	_ [64]byte // alone in its cache block: every request reads it
	n atomic.Uint64
	_ [56]byte
	// watched is written by marked requests only: an incident's.
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
