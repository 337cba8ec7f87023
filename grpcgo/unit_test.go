package grpcgo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/yarpc/yarpcerrors"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestSplitMethod(t *testing.T) {
	for _, tt := range []struct{ in, service, proc string }{
		{"/grpc.health.v1.Health/Check", "grpc.health.v1.Health", "grpc.health.v1.Health::Check"},
		{"pkg.S/M", "pkg.S", "pkg.S::M"},
		{"/a/b/c", "a/b", "a/b::c"},
		{"nomethod", "", "nomethod"},
	} {
		s, p := splitMethod(tt.in)
		if s != tt.service || p != tt.proc {
			t.Errorf("splitMethod(%q) = %q, %q; want %q, %q", tt.in, s, p, tt.service, tt.proc)
		}
	}
}

// grpc-go's rule (stream.go, shouldRetry): one non-negative integer is a
// delay, anything else present is "do not retry".
func TestPushbackRule(t *testing.T) {
	for _, tt := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"0"}, false},
		{[]string{"250"}, false},
		{[]string{"-1"}, true},
		{[]string{""}, true},
		{[]string{"1.5"}, true},
		{[]string{"1", "2"}, true},
	} {
		md := metadata.MD{}
		if tt.values != nil {
			md[_pushbackKey] = tt.values
		}
		if got := pushback(md); got != tt.want {
			t.Errorf("pushback(%q) = %v, want %v", tt.values, got, tt.want)
		}
		h := responseHeaders(md, "no-retry")
		if v, _ := h.Get("no-retry"); (v == "true") != (tt.want) {
			t.Errorf("%q: no-retry header %q", tt.values, v)
		}
	}
}

func TestResponseHeadersSkipsRepeatedKeys(t *testing.T) {
	h := responseHeaders(metadata.MD{"errown-claim": {"claimed", "unclaimed"}, "errown-storm": {"1,1,0,0,0"}}, "errown-no-retry")
	if _, ok := h.Get("errown-claim"); ok {
		t.Error("a claim sent twice must read as missing")
	}
	if v, _ := h.Get("errown-storm"); v != "1,1,0,0,0" {
		t.Errorf("storm %q", v)
	}
}

func TestErrorCodes(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want yarpcerrors.Code
	}{
		{status.Error(codes.Unavailable, "x"), yarpcerrors.CodeUnavailable},
		{fmt.Errorf("wrapped: %w", status.Error(codes.NotFound, "x")), yarpcerrors.CodeNotFound},
		{context.DeadlineExceeded, yarpcerrors.CodeDeadlineExceeded},
		{context.Canceled, yarpcerrors.CodeCancelled},
		{errors.New("plain"), yarpcerrors.CodeUnknown},
		{status.Error(codes.Code(99), "no such code"), yarpcerrors.CodeUnknown},
	} {
		if got := yarpcerrors.FromError(yarpcError(tt.err)).Code(); got != tt.want {
			t.Errorf("yarpcError(%v) has code %v, want %v", tt.err, got, tt.want)
		}
	}
	if yarpcError(nil) != nil {
		t.Error("yarpcError(nil) must be nil")
	}
	if got := status.Code(grpcError(yarpcerrors.UnavailableErrorf("x"))); got != codes.Unavailable {
		t.Errorf("grpcError of a yarpc unavailable: %v", got)
	}
	if got := status.Code(grpcError(context.DeadlineExceeded)); got != codes.DeadlineExceeded {
		t.Errorf("grpcError of a deadline: %v", got)
	}
}

// Every gRPC code has its yarpc code, both ways, and they agree.
func TestCodeTables(t *testing.T) {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		y, ok := _grpcToYARPC[c]
		if !ok {
			t.Errorf("%v has no yarpc code", c)
			continue
		}
		if back := _yarpcToGRPC[y]; back != c {
			t.Errorf("%v -> %v -> %v", c, y, back)
		}
	}
}
