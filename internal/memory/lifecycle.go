package memory

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ErrStarted is returned by a second Start.
var ErrStarted = errors.New("depmem: memory already started")

// Start loads the snapshot, if configured (an unreadable one is logged
// and ignored), and starts snapshots, fleet polls and the coarse clock,
// which Stop ends. A second Start returns ErrStarted.
func (m *Memory) Start() error {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	if m.started {
		return ErrStarted
	}
	m.started = true
	if path := m.cfg.Snapshot.Path; path != "" {
		if err := m.LoadSnapshot(path); err != nil {
			m.snapshotErrors.Inc(1)
			m.logger.Warn("errown: ignoring dependency memory snapshot", zap.String("path", path), zap.Error(err))
		}
	}
	m.clock.Start()
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	m.done = make(chan struct{})
	go m.loop(ctx)
	return nil
}

// Stop ends the background work, waits for it, and writes a last
// snapshot. It does nothing before Start or after an earlier Stop.
func (m *Memory) Stop() error {
	m.lifeMu.Lock()
	defer m.lifeMu.Unlock()
	if m.stop == nil {
		return nil
	}
	m.stop()
	<-m.done
	m.stop = nil
	m.saveLogged()
	m.clock.Stop()
	return nil
}

func (m *Memory) loop(ctx context.Context) {
	defer close(m.done)
	var snapshots, polls <-chan time.Time
	if m.cfg.Snapshot.Path != "" {
		t := time.NewTicker(m.cfg.Snapshot.Interval)
		defer t.Stop()
		snapshots = t.C
	}
	if m.fleet != nil {
		m.fleet.refresh(ctx)
		t := time.NewTicker(m.cfg.Fleet.Interval)
		defer t.Stop()
		polls = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-snapshots:
			m.saveLogged()
		case <-polls:
			m.fleet.refresh(ctx)
		}
	}
}

func (m *Memory) saveLogged() {
	path := m.cfg.Snapshot.Path
	if path == "" {
		return
	}
	if err := m.SaveSnapshot(path); err != nil {
		m.snapshotErrors.Inc(1)
		m.logger.Warn("errown: writing dependency memory snapshot", zap.String("path", path), zap.Error(err))
	}
}

// lifecycle state, kept apart from the learning state.
type lifecycle struct {
	lifeMu  sync.Mutex
	started bool
	stop    context.CancelFunc // nil when not running
	done    chan struct{}
}
