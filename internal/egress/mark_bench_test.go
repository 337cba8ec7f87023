package egress

import (
	"testing"
	"unsafe"

	"github.com/errown/errown/outbound"
	"go.uber.org/yarpc/api/transport"
)

// BenchmarkMark times marking and releasing one request, the egress
// middleware's copy of a call's request and headers, by the headers the
// caller sent.
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
				mw.release(mw.mark(req))
			}
		})
	}
}

// BenchmarkSetString compares setString, a plain comparison of the
// strings, with setStringAddress, which told equal strings by their
// address through unsafe until the safe code replaced it, on the fields
// copyRequest writes: the same strings as the call before (the common
// case), equal strings at other addresses, and other strings.
func BenchmarkSetString(b *testing.B) {
	same := transport.Request{Caller: "caller", Service: "service", Procedure: "procedure::name", ShardKey: "shard"}
	copied := transport.Request{
		Caller:    string([]byte(same.Caller)),
		Service:   string([]byte(same.Service)),
		Procedure: string([]byte(same.Procedure)),
		ShardKey:  string([]byte(same.ShardKey)),
	}
	other := transport.Request{Caller: "caller2", Service: "service2", Procedure: "procedure::other", ShardKey: "other"}
	tests := []struct {
		name string
		give [2]*transport.Request // taken in turn
	}{
		{"same", [2]*transport.Request{&same, &same}},
		{"equal", [2]*transport.Request{&same, &copied}},
		{"other", [2]*transport.Request{&same, &other}},
	}
	impls := []struct {
		name string
		set  func(dst *string, s string)
	}{
		{"address", setStringAddress[string]},
		{"compare", setString[string]},
	}
	for _, tt := range tests {
		for _, impl := range impls {
			b.Run(tt.name+"/"+impl.name, func(b *testing.B) {
				dst := new(transport.Request)
				i := 0
				for b.Loop() {
					req := tt.give[i&1]
					i++
					impl.set(&dst.Caller, req.Caller)
					impl.set(&dst.Service, req.Service)
					impl.set(&dst.Procedure, req.Procedure)
					impl.set(&dst.ShardKey, req.ShardKey)
				}
			})
		}
	}
}

// setStringAddress is what setString was: it sets *dst to s unless it
// holds the same bytes at the same address.
func setStringAddress[S ~string](dst *S, s S) {
	if len(*dst) != len(s) || unsafe.StringData(string(*dst)) != unsafe.StringData(string(s)) {
		*dst = s
	}
}
