package inbound

import (
	"time"
	"unsafe"

	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// _recentDecisions is how many claim decisions a Middleware remembers for
// operators.
const _recentDecisions = _ringSize

// Decision is one claim decision the middleware made, for operators.
type Decision struct {
	// Time is when it was recorded, as the middleware's clock reads it
	// (WithClock): under errown, to within 100ms.
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
// to it, never the success path. Each place is a cache block of its own.
type decisions struct {
	r ring[paddedRecord]
}

// paddedRecord is a record padded so that a ring place holding one fills
// whole cache blocks.
type paddedRecord struct {
	record
	_ [_cacheLine - unsafe.Sizeof(ringSlot[record]{})%_cacheLine]byte
}

// add keeps r, whose procedure hashes to ph (procedureHash), unless it
// repeats the newest decision at the same time.
func (d *decisions) add(r record, ph uint64) {
	d.r.addNew(paddedRecord{record: r}, signature(ph, signatureWords{
		uint64(r.time.UnixNano()),
		uint64(r.failedCalls),
		uint64(r.code)<<16 | uint64(r.class)<<8 | uint64(r.claim),
		uint64(uintptr(unsafe.Pointer(unsafe.StringData(r.reason)))), // one of the Reason constants
	}))
}

// list returns the decisions held, newest first.
func (d *decisions) list() []Decision {
	out := make([]Decision, 0, d.r.held())
	d.r.each(func(p paddedRecord) { out = append(out, p.decision()) })
	return out
}
