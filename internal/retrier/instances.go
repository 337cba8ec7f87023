package retrier

import (
	"sort"
	"sync"
	"time"

	"github.com/errown/errown/retry"
)

// _instancesPerCallee bounds the instances a callee's table keeps: a
// callee's bad instances are a few; past the bound the one seen least
// recently makes room, so that a list churning through thousands of
// peers holds no more.
const _instancesPerCallee = 16

// instances is one callee's instances (peers) that failed calls another
// instance then served, with how many and when last: what a peer
// chooser that records the peers of each call's attempts (package
// retrypeer) lets the retry middleware see. Only a call served after an
// attempt on another peer reaches it: the steady state's successes do
// not. It is safe for concurrent use.
type instances struct {
	now func() time.Time
	// failed is record, made once: the Route's Served is given it on
	// every call served, and a method value made there would allocate.
	failed func(peer string)

	mu     sync.Mutex
	byPeer map[string]*instance
}

type instance struct {
	failed int64
	last   time.Time
}

func newInstances(now func() time.Time) *instances {
	in := &instances{now: now, byPeer: make(map[string]*instance)}
	in.failed = in.record
	return in
}

// record counts a call peer failed that another instance served.
func (in *instances) record(peer string) {
	now := in.now()
	in.mu.Lock()
	defer in.mu.Unlock()
	if e, ok := in.byPeer[peer]; ok {
		e.failed++
		e.last = now
		return
	}
	if len(in.byPeer) >= _instancesPerCallee {
		in.evictOldest()
	}
	in.byPeer[peer] = &instance{failed: 1, last: now}
}

// evictOldest forgets the instance seen least recently, under mu.
func (in *instances) evictOldest() {
	var (
		oldest string
		at     time.Time
		found  bool
	)
	for p, e := range in.byPeer {
		if !found || e.last.Before(at) || e.last.Equal(at) && p < oldest {
			oldest, at, found = p, e.last, true
		}
	}
	delete(in.byPeer, oldest)
}

// appendViews appends the callee's instances to out.
func (in *instances) appendViews(out []retry.InstanceView, callee string) []retry.InstanceView {
	in.mu.Lock()
	defer in.mu.Unlock()
	for p, e := range in.byPeer {
		out = append(out, retry.InstanceView{Callee: callee, Peer: p, Failed: e.failed, Last: e.last})
	}
	return out
}

// Instances returns the instances of every callee with a retry policy
// that failed calls another instance of it then served, as a peer
// chooser that records each attempt's peer (package retrypeer) saw them:
// at most 16 per callee, the ones seen most recently, newest first
// (then by callee and peer). Without such a chooser it returns none.
func (m *Middleware) Instances() []retry.InstanceView {
	var out []retry.InstanceView
	for name, c := range m.callees {
		out = c.instances.appendViews(out, name)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Last.Equal(b.Last) {
			return a.Last.After(b.Last)
		}
		if a.Callee != b.Callee {
			return a.Callee < b.Callee
		}
		return a.Peer < b.Peer
	})
	return out
}
