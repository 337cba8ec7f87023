package stormsim

import (
	"encoding/json"
	"math"
	"sync/atomic"
	"time"
)

// Recovery: DESIGN.md's "Capacity and recovery" counts a run as
// recovered once, from the end of its last trigger, the root's goodput
// stays at RecoveryGoodput or more for RecoveryHold.
const (
	RecoveryGoodput = 0.95
	RecoveryHold    = 2 * time.Second
)

// Timeline is what an open-loop run (Options.Rate) measured over time, in
// bins of Bin from the start of the load. The root's series are by the
// bin a request was sent in (by its arrival schedule); the others by when
// things happened, over the load and the deadline after it.
type Timeline struct {
	// BinMS is the width of a bin, in milliseconds.
	BinMS float64 `json:"binMS"`
	// Rate is the root requests per second of the arrival schedule.
	Rate float64 `json:"rate"`
	// DurationS is how long the load lasted, in seconds.
	DurationS float64 `json:"durationS"`
	// DeadlineS is each root request's deadline, in seconds.
	DeadlineS float64 `json:"deadlineS"`
	// Triggers are the triggers of the run, by node.
	Triggers []TriggerWindow `json:"triggers,omitempty"`
	// Sent is the root requests sent per bin of the load.
	Sent []int `json:"sent"`
	// Good is, per bin of Sent, those that succeeded within the deadline.
	Good []int `json:"good"`
	// Goodput is Good ÷ Sent per bin (null for a bin where none was
	// sent).
	Goodput Ratios `json:"goodput"`
	// Retries is the retries (attempts 2 and later) sent on every hop,
	// per bin.
	Retries []int64 `json:"retries"`
	// Refused is, by reason, the retries the hops refused, per bin:
	// errown's and the blind retry middleware's retry.denied counters
	// (budget, deadline, pushback, ...), retry.suppressed (suppressed:
	// unclaimed), the adaptive throttle's local rejections (throttled)
	// and the requests errown's admission shed in enforce mode (shed),
	// read from each node's metrics at every bin's end.
	Refused map[string][]int64 `json:"refused,omitempty"`
	// Nodes are the series of the nodes with a capacity or a trigger.
	Nodes []NodeTimeline `json:"nodes,omitempty"`
	// Outcomes counts the root requests by how they ended: "ok", "late"
	// (a success after the deadline), else the error's code.
	Outcomes map[string]int `json:"outcomes"`
	// MaxLagMS is the most a root request was sent after its place in the
	// schedule, in milliseconds: what a loaded machine adds.
	MaxLagMS float64 `json:"maxLagMS"`
	// LagMS is, per bin of Sent, the most a root request of the bin was
	// sent after its place in the schedule, in milliseconds: when a
	// loaded machine stalled the run.
	LagMS []float64 `json:"lagMS"`
	// Summary is the run's headline figures.
	Summary Summary `json:"summary"`
}

// TriggerWindow is one trigger of a run.
type TriggerWindow struct {
	Node   string  `json:"node"`
	Kind   string  `json:"kind"`
	FromS  float64 `json:"fromS"`
	ToS    float64 `json:"toS"`
	Factor float64 `json:"factor,omitempty"`
}

// NodeTimeline is what one node with a capacity or a trigger saw, per
// bin.
type NodeTimeline struct {
	// Name is the node's name.
	Name string `json:"name"`
	// Visits is the requests each root request sends it when nothing
	// fails and nothing retries: its offered load per root request.
	Visits float64 `json:"visits"`
	// Arrivals are the requests that reached it (queued, served or
	// refused).
	Arrivals []int64 `json:"arrivals"`
	// Worked are the requests a worker spent the service time on.
	Worked []int64 `json:"worked,omitempty"`
	// Rejected are the requests refused at once, the queue being full.
	Rejected []int64 `json:"rejected,omitempty"`
	// Abandoned are the requests a worker served after their caller had
	// gone (abandoned: serve).
	Abandoned []int64 `json:"abandoned,omitempty"`
	// Left are the requests that left the queue when their caller had
	// gone (abandoned: leave).
	Left []int64 `json:"left,omitempty"`
	// Queue is the most requests waiting at once in the bin.
	Queue []int64 `json:"queue,omitempty"`
	// InTime are the requests a worker finished before their caller's
	// deadline: the node's answers in time, in the bin they ended.
	InTime []int64 `json:"inTime,omitempty"`
	// Totals over the run, the bins' and any after them.
	TotalArrivals  int64 `json:"totalArrivals"`
	TotalAbandoned int64 `json:"totalAbandoned"`
	TotalLeft      int64 `json:"totalLeft"`
	TotalRejected  int64 `json:"totalRejected"`
}

// Summary is an open-loop run's headline figures. The constrained node is
// the first with a trigger, else the first with a capacity.
type Summary struct {
	// Constrained names the constrained node, "" when there is none.
	Constrained string `json:"constrained,omitempty"`
	// TriggerFromS and TriggerToS are when the first trigger starts and
	// the last one ends, in seconds; both 0 without triggers.
	TriggerFromS float64 `json:"triggerFromS"`
	TriggerToS   float64 `json:"triggerToS"`
	// RecoveryS is how long after TriggerToS the root's goodput recovered
	// (see Recovery), a multiple of the bin; nil when it did not within
	// the run, or the run has no trigger.
	RecoveryS *float64 `json:"recoveryS"`
	// RecoveryHorizonS is the latest recovery the run could see: from
	// TriggerToS to RecoveryHold before the load's end.
	RecoveryHorizonS float64 `json:"recoveryHorizonS"`
	// GoodputBefore, GoodputDuring and GoodputAfter are the root's
	// goodput over the bins before the first trigger, during the
	// triggers, and after the last one (NaN, null, where there is none).
	GoodputBefore float64 `json:"goodputBefore"`
	GoodputDuring float64 `json:"goodputDuring"`
	GoodputAfter  float64 `json:"goodputAfter"`
	// SentDuring is the root requests sent during the triggers.
	SentDuring int `json:"sentDuring"`
	// Arrivals is the requests that reached the constrained node over
	// the run, Offered those that would have with no failure and no
	// retry (root requests × its Visits).
	Arrivals int64   `json:"arrivals"`
	Offered  float64 `json:"offered"`
	// ArrivalsPerOffered is Arrivals ÷ Offered.
	ArrivalsPerOffered float64 `json:"arrivalsPerOffered"`
	// ArrivalsPerRequest is Arrivals per root request.
	ArrivalsPerRequest float64 `json:"arrivalsPerRequest"`
	// AnswersDuring are the constrained node's answers in time
	// (NodeTimeline.InTime) in the bins of the triggers.
	AnswersDuring int64 `json:"answersDuring,omitempty"`
	// Retries is the retries sent on every hop over the run; Refused,
	// the refusals by reason.
	Retries int64            `json:"retries"`
	Refused map[string]int64 `json:"refused,omitempty"`
}

// MarshalJSON writes the NaN goodputs of a run without a phase as null.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary // without this method
	return json.Marshal(struct {
		plain
		GoodputBefore *float64 `json:"goodputBefore"`
		GoodputDuring *float64 `json:"goodputDuring"`
		GoodputAfter  *float64 `json:"goodputAfter"`
	}{plain(s), finite(s.GoodputBefore), finite(s.GoodputDuring), finite(s.GoodputAfter)})
}

// UnmarshalJSON reads what MarshalJSON writes, null as NaN.
func (s *Summary) UnmarshalJSON(b []byte) error {
	type plain Summary
	var v struct {
		plain
		GoodputBefore *float64 `json:"goodputBefore"`
		GoodputDuring *float64 `json:"goodputDuring"`
		GoodputAfter  *float64 `json:"goodputAfter"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Summary(v.plain)
	s.GoodputBefore, s.GoodputDuring, s.GoodputAfter = orNaN(v.GoodputBefore), orNaN(v.GoodputDuring), orNaN(v.GoodputAfter)
	return nil
}

// Recovered returns the recovery time and true when the run recovered.
func (s Summary) Recovered() (time.Duration, bool) {
	if s.RecoveryS == nil {
		return 0, false
	}
	return time.Duration(*s.RecoveryS * float64(time.Second)), true
}

// Ratios are ratios per bin, NaN (null in JSON) where undefined.
type Ratios []float64

// MarshalJSON writes NaN as null.
func (r Ratios) MarshalJSON() ([]byte, error) {
	out := make([]*float64, len(r))
	for i, v := range r {
		out[i] = finite(v)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads null as NaN.
func (r *Ratios) UnmarshalJSON(b []byte) error {
	var in []*float64
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*r = make(Ratios, len(in))
	for i, v := range in {
		(*r)[i] = orNaN(v)
	}
	return nil
}

func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// Recovery returns how long after from the goodput per bin (bins of
// width bin from 0) recovered: the start of the first bin starting at or
// after from from which every bin over hold has a goodput of threshold or
// more, less from; false when no such bin has hold of bins after it. A
// bin where nothing was sent (NaN) breaks no hold.
func Recovery(goodput []float64, bin, from, hold time.Duration, threshold float64) (time.Duration, bool) {
	if bin <= 0 {
		return 0, false
	}
	first := int((from + bin - 1) / bin)
	need := int((hold + bin - 1) / bin)
	run := 0 // good bins in a row from b-run
	for b := first; b < len(goodput); b++ {
		if g := goodput[b]; g < threshold { // NaN passes
			run = 0
			continue
		}
		run++
		if run == need {
			return time.Duration(b-need+1)*bin - from, true
		}
	}
	return 0, false
}

// goodputOver returns the goodput over the bins whose start is in
// [from, to): successes ÷ requests sent, NaN with none sent, and the
// requests sent.
func goodputOver(sent, good []int, bin, from, to time.Duration) (float64, int) {
	n, ok := sumOver(sent, bin, from, to), sumOver(good, bin, from, to)
	if n == 0 {
		return math.NaN(), 0
	}
	return float64(ok) / float64(n), n
}

// sumOver returns the sum of the bins of v whose start is in [from, to).
func sumOver[T int | int64](v []T, bin, from, to time.Duration) T {
	var sum T
	for b, x := range v {
		if start := time.Duration(b) * bin; start >= from && start < to {
			sum += x
		}
	}
	return sum
}

// summarize fills t.Summary from the series, for root requests sent.
// ShedBefore returns the requests errown's admission shed (Refused's
// "shed") in the bins that end before the run's first trigger: in the
// steady state.
func (t *Timeline) ShedBefore() int64 {
	var n int64
	for b, v := range t.Refused["shed"] {
		if float64(b+1)*t.BinMS/1000 <= t.Summary.TriggerFromS {
			n += v
		}
	}
	return n
}

func (t *Timeline) summarize(requests int) {
	bin := time.Duration(t.BinMS * float64(time.Millisecond))
	dur := time.Duration(t.DurationS * float64(time.Second))
	s := Summary{GoodputDuring: math.NaN(), Refused: map[string]int64{}}
	var from, to time.Duration
	if len(t.Triggers) > 0 {
		from, to = time.Duration(math.MaxInt64), 0
		for _, tr := range t.Triggers {
			from = min(from, seconds(tr.FromS))
			to = max(to, seconds(tr.ToS))
		}
		s.Constrained = t.Triggers[0].Node
		s.TriggerFromS, s.TriggerToS = from.Seconds(), to.Seconds()
		s.RecoveryHorizonS = max(0, (dur - RecoveryHold - to).Seconds())
		if d, ok := Recovery(t.Goodput, bin, to, RecoveryHold, RecoveryGoodput); ok {
			v := d.Seconds()
			s.RecoveryS = &v
		}
		s.GoodputDuring, s.SentDuring = goodputOver(t.Sent, t.Good, bin, from, to)
		s.GoodputBefore, _ = goodputOver(t.Sent, t.Good, bin, 0, from)
		s.GoodputAfter, _ = goodputOver(t.Sent, t.Good, bin, to, dur)
	} else {
		s.GoodputBefore, _ = goodputOver(t.Sent, t.Good, bin, 0, dur)
		s.GoodputAfter = math.NaN()
	}
	if s.Constrained == "" && len(t.Nodes) > 0 {
		s.Constrained = t.Nodes[0].Name
	}
	for _, n := range t.Nodes {
		if n.Name != s.Constrained {
			continue
		}
		s.Arrivals = n.TotalArrivals
		s.Offered = float64(requests) * n.Visits
		s.ArrivalsPerOffered = ratio(float64(s.Arrivals), s.Offered)
		s.ArrivalsPerRequest = ratio(float64(s.Arrivals), float64(requests))
		s.AnswersDuring = sumOver(n.InTime, bin, from, to)
	}
	for _, r := range t.Retries {
		s.Retries += r
	}
	for reason, bins := range t.Refused {
		for _, v := range bins {
			s.Refused[reason] += v
		}
	}
	t.Summary = s
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// clock maps times to the bins of a run's load. Before start (and with
// no start) every time is outside.
type clock struct {
	start atomic.Int64 // UnixNano; 0 before the load starts
	bin   time.Duration
	bins  int
}

// begin starts the bins at now.
func (c *clock) begin(now time.Time) { c.start.Store(now.UnixNano()) }

// index returns the bin of now, or -1 outside the bins.
func (c *clock) index(now time.Time) int {
	if c == nil {
		return -1
	}
	start := c.start.Load()
	if start == 0 || c.bin <= 0 {
		return -1
	}
	b := int(time.Duration(now.UnixNano()-start) / c.bin)
	if b < 0 || b >= c.bins {
		return -1
	}
	return b
}

// counts is a counter per bin of a clock, and in total. Its methods are
// no-ops on nil.
type counts struct {
	c     *clock
	bins  []atomic.Int64
	total atomic.Int64
}

func newCounts(c *clock) *counts { return &counts{c: c, bins: make([]atomic.Int64, c.bins)} }

func (n *counts) add(v int64) {
	if n == nil {
		return
	}
	n.total.Add(v)
	if b := n.c.index(time.Now()); b >= 0 {
		n.bins[b].Add(v)
	}
}

// most records v in its bin if it is the most yet.
func (n *counts) most(v int64) {
	if n == nil {
		return
	}
	b := n.c.index(time.Now())
	if b < 0 {
		return
	}
	for {
		cur := n.bins[b].Load()
		if v <= cur || n.bins[b].CompareAndSwap(cur, v) {
			return
		}
	}
}

func (n *counts) values() []int64 {
	out := make([]int64, len(n.bins))
	for i := range n.bins {
		out[i] = n.bins[i].Load()
	}
	return out
}

// nodeEvent is what one series of a node counts.
type nodeEvent int

const (
	_arrived   nodeEvent = iota // a request reached the node (queued, served or refused)
	_worked                     // a worker spent the service time on a request
	_rejected                   // a request was refused at once, the queue being full
	_abandoned                  // a worker served a request after its caller had gone
	_left                       // a request left the queue when its caller had gone
	_inTime                     // a worker finished a request before its caller's deadline
	_nodeEvents
)

// nodeSeries are the series of one node with a capacity or a trigger: a
// count per event, and the most requests waiting at once. Its methods are
// no-ops on nil.
type nodeSeries struct {
	events [_nodeEvents]*counts
	queue  *counts
}

func newNodeSeries(c *clock) *nodeSeries {
	s := &nodeSeries{queue: newCounts(c)}
	for e := range s.events {
		s.events[e] = newCounts(c)
	}
	return s
}

// count counts one e.
func (s *nodeSeries) count(e nodeEvent) {
	if s != nil {
		s.events[e].add(1)
	}
}

func (s *nodeSeries) queued(n int) {
	if s != nil {
		s.queue.most(int64(n))
	}
}

// timeline returns the node's series.
func (s *nodeSeries) timeline(name string, visits float64, capacity bool) NodeTimeline {
	arrived, worked, rejected, abandoned, left, inTime := s.events[_arrived], s.events[_worked], s.events[_rejected], s.events[_abandoned], s.events[_left], s.events[_inTime]
	t := NodeTimeline{
		Name: name, Visits: visits, Arrivals: arrived.values(),
		TotalArrivals: arrived.total.Load(), TotalAbandoned: abandoned.total.Load(),
		TotalLeft: left.total.Load(), TotalRejected: rejected.total.Load(),
	}
	if capacity {
		t.Worked, t.Rejected, t.Abandoned, t.Left, t.Queue = worked.values(), rejected.values(), abandoned.values(), left.values(), s.queue.values()
		t.InTime = inTime.values()
	}
	return t
}
