// Test IDL for errown's end-to-end tests of Thrift exceptions.
//
// Regenerate the Go code with internal/testidl/generate.sh (go generate
// ./internal/testidl).

// EchoRequest is the argument of Echo::call. Key travels down a chain of
// services; Fail tells the handler which error, if any, to return
// (see the probe test for the values it uses).
struct EchoRequest {
    1: required string key
    2: optional string fail
}

struct EchoResponse {
    1: required string key
}

// NotFoundError is an application error yarpc reports with code NOT_FOUND.
exception NotFoundError {
    1: optional string message
} (
    rpc.code = "NOT_FOUND"
)

// UnavailableError is an application error yarpc reports with code
// UNAVAILABLE.
exception UnavailableError {
    1: optional string message
} (
    rpc.code = "UNAVAILABLE"
)

// PlainError is an application error with no rpc.code annotation.
exception PlainError {
    1: optional string message
}

service Echo {
    EchoResponse call(1: EchoRequest req) throws (
        1: NotFoundError notFound,
        2: UnavailableError unavailable,
        3: PlainError plain,
    )
}
