// Package otelsdk holds the tests of package tracing that read its hooks'
// tags and events back through the OpenTelemetry SDK and the OpenTracing
// bridge. It is a module of its own so that the SDK and the bridge stay
// out of errown's go.mod: a user's build needs neither.
package otelsdk
