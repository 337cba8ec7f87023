package grpcgo

import (
	"context"
	"errors"

	"go.uber.org/yarpc/yarpcerrors"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// _grpcToYARPC maps gRPC codes to yarpc's. It mirrors, entry for entry,
// GRPCCodeToYARPCCode in go.uber.org/yarpc@v1.81.0/internal/grpcerrorcodes/codes.go,
// the table yarpc's gRPC transport reads a callee's status with
// (transport/grpc/outbound.go, invokeErrorToYARPCError): yarpc keeps it in
// an internal package, out of reach. A code missing from it is unknown
// there, and here.
var _grpcToYARPC = map[codes.Code]yarpcerrors.Code{
	codes.OK:                 yarpcerrors.CodeOK,
	codes.Canceled:           yarpcerrors.CodeCancelled,
	codes.Unknown:            yarpcerrors.CodeUnknown,
	codes.InvalidArgument:    yarpcerrors.CodeInvalidArgument,
	codes.DeadlineExceeded:   yarpcerrors.CodeDeadlineExceeded,
	codes.NotFound:           yarpcerrors.CodeNotFound,
	codes.AlreadyExists:      yarpcerrors.CodeAlreadyExists,
	codes.PermissionDenied:   yarpcerrors.CodePermissionDenied,
	codes.ResourceExhausted:  yarpcerrors.CodeResourceExhausted,
	codes.FailedPrecondition: yarpcerrors.CodeFailedPrecondition,
	codes.Aborted:            yarpcerrors.CodeAborted,
	codes.OutOfRange:         yarpcerrors.CodeOutOfRange,
	codes.Unimplemented:      yarpcerrors.CodeUnimplemented,
	codes.Internal:           yarpcerrors.CodeInternal,
	codes.Unavailable:        yarpcerrors.CodeUnavailable,
	codes.DataLoss:           yarpcerrors.CodeDataLoss,
	codes.Unauthenticated:    yarpcerrors.CodeUnauthenticated,
}

// _yarpcToGRPC is the reverse, mirroring YARPCCodeToGRPCCode in the same
// file (used by yarpc's gRPC inbound, transport/grpc/handler.go).
var _yarpcToGRPC = func() map[yarpcerrors.Code]codes.Code {
	m := make(map[yarpcerrors.Code]codes.Code, len(_grpcToYARPC))
	for g, y := range _grpcToYARPC {
		m[y] = g
	}
	return m
}()

// _statuses holds one yarpc error per code, which errown's middleware
// classifies: they are only read, never returned to anyone.
var _statuses = func() map[yarpcerrors.Code]*yarpcerrors.Status {
	m := make(map[yarpcerrors.Code]*yarpcerrors.Status, len(_grpcToYARPC))
	for _, y := range _grpcToYARPC {
		if y != yarpcerrors.CodeOK {
			m[y] = yarpcerrors.Newf(y, "grpc-go: %v", y)
		}
	}
	return m
}()

// grpcCode returns the gRPC code an error stands for, exactly as grpc-go's
// server sends a handler's error (server.go, processUnaryRPC: a status
// error's own code, else the code of a context error, else unknown) and as
// a client sees the error an invoker returned. nil is OK.
func grpcCode(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return status.FromContextError(err).Code()
}

// yarpcError returns the yarpc error errown's middleware classifies err by:
// nil for nil, else a yarpc status with err's code (an error whose status
// says OK is unknown, as errown counts it).
func yarpcError(err error) error {
	if err == nil {
		return nil
	}
	y, ok := _grpcToYARPC[grpcCode(err)]
	if !ok || y == yarpcerrors.CodeOK {
		y = yarpcerrors.CodeUnknown
	}
	return _statuses[y]
}

// grpcError returns a gRPC status error for an error errown's middleware
// returned without the invoker's own: should not happen, kept as a
// fallback so that a caller always gets a status.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	c, ok := _yarpcToGRPC[yarpcerrors.FromError(err).Code()]
	if !ok {
		c = codes.Unknown
	}
	return status.Error(c, err.Error())
}
