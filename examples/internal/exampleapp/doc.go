// Package exampleapp is the plumbing the three example services share: an
// fx application with errown.Module, configuration from a YAML file, zap
// logs, tally metrics served for Prometheus, a yarpc dispatcher over HTTP,
// and an admin server with /metrics, /debug/errown and a /break switch.
// Each example's main package only registers its handler.
package exampleapp
