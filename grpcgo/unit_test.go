package grpcgo

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
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
		assert.Equal(t, tt.service, s, "splitMethod(%q): service", tt.in)
		assert.Equal(t, tt.proc, p, "splitMethod(%q): procedure", tt.in)
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
		assert.Equal(t, tt.want, pushback(md), "pushback(%q)", tt.values)
		h := responseHeaders(md, "no-retry")
		v, _ := h.Get("no-retry")
		assert.Equal(t, tt.want, v == "true", "%q: no-retry header %q", tt.values, v)
	}
}

func TestResponseHeadersSkipsRepeatedKeys(t *testing.T) {
	h := responseHeaders(metadata.MD{"errown-claim": {"claimed", "unclaimed"}, "errown-storm": {"1,1,0,0,0"}}, "errown-no-retry")
	_, ok := h.Get("errown-claim")
	assert.False(t, ok, "a claim sent twice must read as missing")
	v, _ := h.Get("errown-storm")
	assert.Equal(t, "1,1,0,0,0", v, "storm")
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
		assert.Equal(t, tt.want, yarpcerrors.FromError(yarpcError(tt.err)).Code(), "yarpcError(%v) has code", tt.err)
	}
	assert.NoError(t, yarpcError(nil), "yarpcError(nil) must be nil")
	assert.Equal(t, codes.Unavailable, status.Code(grpcError(yarpcerrors.UnavailableErrorf("x"))), "grpcError of a yarpc unavailable")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(grpcError(context.DeadlineExceeded)), "grpcError of a deadline")
}

// Every gRPC code has its yarpc code, both ways, and they agree.
func TestCodeTables(t *testing.T) {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		y, ok := _grpcToYARPC[c]
		if !assert.True(t, ok, "%v has no yarpc code", c) {
			continue
		}
		assert.Equal(t, c, _yarpcToGRPC[y], "%v -> %v -> back", c, y)
	}
}
