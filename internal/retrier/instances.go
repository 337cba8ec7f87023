package retrier

import (
	"sort"
	"sync"
	"time"

	"github.com/errown/errown/retry"
)

// _instancesPerCallee bounds a callee's table: bad instances are few, and
// past the bound the least recently seen makes room.
const _instancesPerCallee = 16

// instances is one callee's peers that failed calls another instance then
// served, with count and time, as a peer chooser recording each attempt's
// peer (package retrypeer) reports them; the steady state's successes
// never reach it. It is safe for concurrent use.
type instances struct {
	now func() time.Time
	// failed is record, made once: a method value made per served call
	// would allocate.
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

// Instances returns, per callee with a retry policy, the instances that
// failed calls another instance served, as a recording peer chooser
// (package retrypeer) saw them: at most 16 per callee, newest first (then
// by callee and peer). Without such a chooser it returns none.
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
