package ingress

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/errown/errown/internal/wire"
	"go.uber.org/yarpc/yarpcerrors"
)

// BenchmarkDecisionSignature compares the ways of making a decision's
// reason a word of its signature: its constant's address through unsafe,
// and reasonWord.
func BenchmarkDecisionSignature(b *testing.B) {
	reasons := []string{ReasonOwnFailure, ReasonCoincidental, ReasonAtLeastOnce, ReasonRetriedBelow}
	ph := procedureHash("checkout::pay")
	words := []struct {
		name string
		word func(string) uint64
	}{
		{"address", func(s string) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))) }},
		{"reasonWord", reasonWord},
	}
	for _, w := range words {
		b.Run(w.name, func(b *testing.B) {
			var sink uint64
			i := 0
			for b.Loop() {
				r := record{time: time.Unix(0, int64(i)), reason: reasons[i&3], failedCalls: 1, code: yarpcerrors.CodeUnavailable, class: wire.ClassFailure}
				i++
				sink += signature(ph, signatureWords{
					uint64(r.time.UnixNano()),
					uint64(r.failedCalls),
					uint64(r.code)<<16 | uint64(r.class)<<8 | uint64(r.claim),
					w.word(r.reason),
				})
			}
			_ = sink
		})
	}
}

// BenchmarkDecisionsRing compares the ring of decisions with each place
// padded to whole cache blocks (paddedRecord, as it was) and unpadded (as
// it is), adding from parallel goroutines with GOMAXPROCS 2, every add a
// new decision.
func BenchmarkDecisionsRing(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	r := record{procedure: "checkout::pay", reason: ReasonOwnFailure, failedCalls: 1}
	b.Run("padded", func(b *testing.B) {
		var d ring[paddedRecord]
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				d.add(paddedRecord{record: r})
			}
		})
	})
	b.Run("unpadded", func(b *testing.B) {
		var d ring[record]
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				d.add(r)
			}
		})
	})
}

// paddedRecord is a record padded so that a ring place holding one fills
// whole cache blocks, as the decisions ring held them.
type paddedRecord struct {
	record
	_ [_cacheLine - unsafe.Sizeof(ringSlot[record]{})%_cacheLine]byte
}
