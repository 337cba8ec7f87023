// Package testidl holds generated test IDL for errown's end-to-end tests of
// Thrift exceptions and protobuf errors: a small Echo service, in Thrift
// (thrift/echo.thrift, generated into package thrift/echo and its
// echoclient, echoserver, echofx and echotest packages) and in protobuf
// (proto/echo.proto, generated into package proto/echopb). Services A→B→C→D
// built on it call the next one with the request's key and fail as the
// request's fail field says.
//
// The generated code is committed; nothing needs the generators to build
// or test. generate.sh rebuilds it with the generators at the versions
// yarpc v1.81.0 uses: thriftrw v1.32.0 with yarpc's thriftrw-plugin-yarpc
// for Thrift, protoc with gogo/protobuf v1.3.2's protoc-gen-gogoslick
// (plugins=grpc) and yarpc's protoc-gen-yarpc-go for protobuf. It needs
// protoc on PATH (Debian: apt-get install protobuf-compiler).
//
// probe_test.go pins down how yarpc v1.81.0 hands application errors to
// middleware over HTTP, gRPC and TChannel; FACTS.md writes the findings up.
package testidl

//go:generate ./generate.sh thrift
//go:generate ./generate.sh proto
