package ingress

import (
	"time"
	"unsafe"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/ownership"
	"go.uber.org/yarpc/yarpcerrors"
)

// _recentDecisions is how many claim decisions a Middleware remembers for
// operators.
const _recentDecisions = _ringSize

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

func (r *record) decision() inbound.Decision {
	return inbound.Decision{
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
func (d *decisions) list() []inbound.Decision {
	out := make([]inbound.Decision, 0, d.r.held())
	d.r.each(func(p paddedRecord) { out = append(out, p.decision()) })
	return out
}
