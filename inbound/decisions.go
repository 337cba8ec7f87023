package inbound

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// _recentDecisions is how many claim decisions a Middleware remembers for
// operators.
const _recentDecisions = 64

// Decision is one claim decision the middleware made, for operators.
type Decision struct {
	Time      time.Time `json:"time"`
	Procedure string    `json:"procedure"`
	// Code is the error's yarpc code.
	Code string `json:"code"`
	// Claim is what the error response said: claimed or unclaimed.
	Claim string `json:"claim"`
	// FailedCalls is how many of the request's outbound calls failed.
	FailedCalls int `json:"failedCalls"`
	// Reason says why: "own failure", "coincidental", "at-least-once" or
	// "retried below".
	Reason string `json:"reason"`
}

// Reasons of a Decision.
const (
	ReasonOwnFailure   = "own failure"
	ReasonCoincidental = "coincidental"
	ReasonAtLeastOnce  = "at-least-once"
	ReasonRetriedBelow = "retried below"
)

// record is a Decision as the request path keeps it: its names are looked
// up when the decisions are listed.
type record struct {
	time        time.Time
	procedure   string
	reason      string
	failedCalls int
	code        yarpcerrors.Code
	class       ownership.Class
	claim       ownership.Claim
}

func (r *record) decision() Decision {
	return Decision{
		Time:        r.time,
		Procedure:   r.procedure,
		Code:        codeName(r.code, r.class),
		Claim:       r.claim.String(),
		FailedCalls: r.failedCalls,
		Reason:      r.reason,
	}
}

// decisions is a ring of the latest decisions. Only error responses write
// to it, never the success path. It takes no lock that all writers share:
// a writer takes the next place from an atomic cursor and locks only that
// place, which the next writer to want it takes _recentDecisions
// decisions later; a reader locks each place in turn. A decision still
// being written when the list is read is left out of it.
type decisions struct {
	next atomic.Uint64 // how many decisions were ever added
	_    [_cacheLine - 8]byte
	ring [_recentDecisions]slot
}

// _cacheLine is the size of a cache block, which a decisions' cursor and
// each of its places keep to themselves: two cores writing decisions
// would otherwise take turns at one block.
const _cacheLine = 64

// slot is one place of a decisions ring.
type slot struct {
	mu  sync.Mutex
	n   uint64 // rec is the n-th decision added; 0: none yet
	rec record
	_   [_cacheLine - (unsafe.Sizeof(sync.Mutex{})+8+unsafe.Sizeof(record{}))%_cacheLine]byte
}

func (d *decisions) add(r record) {
	n := d.next.Add(1)
	s := &d.ring[(n-1)%_recentDecisions]
	s.mu.Lock()
	if s.n < n { // else a writer that took the place a lap later was first
		s.n, s.rec = n, r
	}
	s.mu.Unlock()
}

// list returns the decisions held, newest first.
func (d *decisions) list() []Decision {
	n := d.next.Load()
	held := min(n, _recentDecisions)
	out := make([]Decision, 0, held)
	for i := n; i > n-held; i-- {
		s := &d.ring[(i-1)%_recentDecisions]
		s.mu.Lock()
		r, ok := s.rec, s.n == i
		s.mu.Unlock()
		if ok {
			out = append(out, r.decision())
		}
	}
	return out
}
