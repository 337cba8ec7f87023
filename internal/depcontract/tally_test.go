package depcontract

import (
	"io"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/internal/testtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
)

// wrapped is a Scope of another library's, with a Close of its own.
type wrapped struct{ tally.Scope }

func (wrapped) Close() error { return nil }

func TestTallyCloser(t *testing.T) {
	root := tally.NewTestScope("", nil)
	tests := []struct {
		name string
		give tally.Scope
		want bool
	}{
		{"tally's root", root, true},
		{"tally's tagged scope", root.Tagged(map[string]string{"edge": "a"}), true},
		{"tally's sub-scope", root.SubScope("depmem"), true},
		{"the no-op scope", tally.NoopScope, true},
		{"another Scope with a Close", wrapped{root}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := TallyCloser(tt.give)
			assert.Equal(t, tt.want, ok)
			assert.Equal(t, tt.want, c != nil)
		})
	}
	require.NoError(t, CheckTally(), "tally %s's scopes", _tallyVersion)
	assert.ErrorIs(t, checkScopeType(reflect.TypeOf(0)), ErrMoved)
	assert.ErrorIs(t, checkScopeType(nil), ErrMoved)
}

// TestTallyCloseDropsTheScope: what TallyCloser's Close is for, on tally
// the version pinned: a closed tagged scope is dropped at the next report,
// and what it counts after that is reported no more.
func TestTallyCloseDropsTheScope(t *testing.T) {
	rep := &counters{StatsReporter: tally.NullStatsReporter}
	root, closer := tally.NewRootScope(tally.ScopeOptions{Reporter: rep}, time.Millisecond)
	defer func() { require.NoError(t, closer.Close()) }()
	edge := root.Tagged(map[string]string{"edge": "a"})
	edge.Counter("failures").Inc(1)
	require.Eventually(t, func() bool { return rep.seen("a") }, time.Second, time.Millisecond, "the edge's counter reported")
	c, ok := TallyCloser(edge)
	require.True(t, ok)
	require.NoError(t, c.Close())
	testtime.Sleep(20 * time.Millisecond) // reports that drop the closed scope
	rep.reset()
	edge.Counter("failures").Inc(1)
	testtime.Sleep(20 * time.Millisecond)
	assert.False(t, rep.seen("a"), "a closed scope's counter reported after its drop")
}

// counters records the edge tag of each counter reported.
type counters struct {
	tally.StatsReporter
	mu    sync.Mutex
	edges map[string]bool
}

func (c *counters) ReportCounter(_ string, tags map[string]string, _ int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.edges == nil {
		c.edges = map[string]bool{}
	}
	c.edges[tags["edge"]] = true
}

func (c *counters) seen(edge string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.edges[edge]
}

func (c *counters) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.edges = nil
}

var _ io.Closer = wrapped{}
