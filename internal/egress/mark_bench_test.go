package egress

import (
	"testing"

	"github.com/errown/errown/outbound"
	"go.uber.org/yarpc/api/transport"
)

// BenchmarkMark times marking one request, the egress middleware's copy
// of a call's request and headers (allocated, never reused), by the
// headers the caller sent.
func BenchmarkMark(b *testing.B) {
	mw, err := New(outbound.Config{})
	if err != nil {
		b.Fatal(err)
	}
	tests := []struct {
		name string
		give transport.Headers
	}{
		{"none", transport.NewHeaders()},
		{"lower", transport.NewHeaders().With("x-trace", "abc").With("baggage", "v")},
		{"mixed", transport.NewHeaders().With("X-Trace", "abc").With("Baggage", "v")},
	}
	for _, tt := range tests {
		req := &transport.Request{Caller: "c", Service: "s", Procedure: "p", Encoding: "raw", Headers: tt.give}
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_markSink = mw.mark(req, 0)
			}
		})
	}
}

var _markSink *transport.Request
