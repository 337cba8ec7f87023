// Package tallyv3 reports errown's metrics to a scope of
// github.com/uber-go/tally (v3), the tally yarpc v1 takes its metrics
// from (yarpc.Config.Metrics.Tally), through the github.com/uber-go/tally/v4
// Scope errown's parts are written against: Scope adapts one to the other.
//
// In docs/DESIGN.md's data flow it sits at the edge of errown's metrics,
// between every part's instruments and the application's v3 scope; the
// instruments are allocated at construction, so the request path pays one
// more interface call per increment.
package tallyv3
