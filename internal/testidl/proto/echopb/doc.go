// Package echopb is generated test IDL for errown's end-to-end tests of
// protobuf errors: the messages and the YARPC client and server of
// proto/echo.proto, a service Echo with one procedure, Call, and an
// ErrorDetail message to attach to errors with protobuf.WithErrorDetails.
//
// Everything here but this file is generated, by protoc with gogo/protobuf
// v1.3.2's protoc-gen-gogoslick (echo.pb.go) and yarpc v1.81.0's
// protoc-gen-yarpc-go (echo.pb.yarpc.go); do not edit it, run
// `go generate github.com/errown/errown/internal/testidl` instead (see
// internal/testidl/generate.sh).
package echopb
