package tallyv3

import (
	"time"

	tallyv3 "github.com/uber-go/tally"
	"github.com/uber-go/tally/v4"
)

// Scope returns a tally v4 Scope that reports to s, a tally v3 Scope:
// counters, gauges, timers and histograms by the same names and tags,
// sub-scopes and tagged scopes of s, and s's capabilities.
func Scope(s tallyv3.Scope) tally.Scope { return scope{s} }

type scope struct{ s tallyv3.Scope }

var _ tally.Scope = scope{}

func (s scope) Counter(name string) tally.Counter { return s.s.Counter(name) }

func (s scope) Gauge(name string) tally.Gauge { return s.s.Gauge(name) }

func (s scope) Timer(name string) tally.Timer { return timer{s.s.Timer(name)} }

func (s scope) Histogram(name string, b tally.Buckets) tally.Histogram {
	return histogram{s.s.Histogram(name, buckets(b))}
}

func (s scope) Tagged(tags map[string]string) tally.Scope { return scope{s.s.Tagged(tags)} }

func (s scope) SubScope(name string) tally.Scope { return scope{s.s.SubScope(name)} }

func (s scope) Capabilities() tally.Capabilities { return s.s.Capabilities() }

// buckets returns b as v3's: v3 tells duration histograms from value
// histograms by the type of their buckets, so v4's two bucket types become
// v3's; any other Buckets has v3's methods already.
func buckets(b tally.Buckets) tallyv3.Buckets {
	switch b := b.(type) {
	case nil:
		return nil
	case tally.DurationBuckets:
		return tallyv3.DurationBuckets(b)
	case tally.ValueBuckets:
		return tallyv3.ValueBuckets(b)
	default:
		return b
	}
}

// timer is a v3 Timer as v4's: only the stopwatch differs.
type timer struct{ t tallyv3.Timer }

func (t timer) Record(d time.Duration) { t.t.Record(d) }

func (t timer) Start() tally.Stopwatch { return tally.NewStopwatch(time.Now(), t) }

func (t timer) RecordStopwatch(start time.Time) { t.t.Record(time.Since(start)) }

// histogram is a v3 Histogram as v4's: only the stopwatch differs.
type histogram struct{ h tallyv3.Histogram }

func (h histogram) RecordValue(v float64) { h.h.RecordValue(v) }

func (h histogram) RecordDuration(d time.Duration) { h.h.RecordDuration(d) }

func (h histogram) Start() tally.Stopwatch { return tally.NewStopwatch(time.Now(), h) }

func (h histogram) RecordStopwatch(start time.Time) { h.h.RecordDuration(time.Since(start)) }
