package memory

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/obs"
	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/ownership"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestSnapshotRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.json")
	m, clock := newMemory(t, depmem.Config{MinSamples: 5})
	observe(m, edgeA, 10, 9)
	clock.Add(2 * time.Minute)
	observe(m, edgeB, 10, 1)
	require.Equal(t, ownership.KindFailClose, m.Kind(edgeA))
	require.NoError(t, m.SaveSnapshot(path))

	again, err := NewMemory(depmem.Config{MinSamples: 5}, withClock(clock.Now))
	require.NoError(t, err)
	require.NoError(t, again.LoadSnapshot(path))
	assert.Equal(t, m.Edges(), again.Edges())
	assert.Equal(t, m.Snapshot(), again.Snapshot())

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = ParseSnapshot(b)
	require.NoError(t, err)
}

func TestLoadSnapshotMissingIsFirstStart(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{})
	assert.NoError(t, m.LoadSnapshot(filepath.Join(t.TempDir(), "none.json")))
	assert.Empty(t, m.Edges())
}

func TestLoadSnapshotOtherBucketWidth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.json")
	m, _ := newMemory(t, depmem.Config{})
	observe(m, edgeA, 3, 3)
	require.NoError(t, m.SaveSnapshot(path))
	other, _ := newMemory(t, depmem.Config{Window: time.Hour})
	err := other.LoadSnapshot(path)
	assert.ErrorIs(t, err, ErrBadSnapshot)
	assert.ErrorContains(t, err, "bucket width")
	assert.Empty(t, other.Edges())
}

func TestParseSnapshotRejects(t *testing.T) {
	good := `{"format":"errown-depmem","version":1,"bucketWidthNanos":60000000000,"edges":[{"callerProcedure":"a","service":"b","procedure":"c","kind":"fail-close","buckets":[[1,2,1]]}]}`
	_, err := ParseSnapshot([]byte(good))
	require.NoError(t, err)
	tests := []struct {
		name string
		give string
		want string
	}{
		{"empty", "", "bad snapshot: EOF"},
		{"truncated", good[:len(good)/2], "bad snapshot: unexpected EOF"},
		{"not json", "\x00\x01garbage", "bad snapshot"},
		{"foreign json", `{"hello":"world"}`, "unknown field"},
		{"foreign format", strings.Replace(good, "errown-depmem", "other", 1), `format "other"`},
		{"wrong version", strings.Replace(good, `"version":1`, `"version":2`, 1), "version 2, want 1"},
		{"bad width", strings.Replace(good, "60000000000", "0", 1), "bucket width 0"},
		{"negative count", strings.Replace(good, "[1,2,1]", "[1,-2,1]", 1), "counts -2, 1"},
		{"joint over failures", strings.Replace(good, "[1,2,1]", "[1,2,3]", 1), "counts 2, 3"},
		{"no service", strings.Replace(good, `"service":"b"`, `"service":""`, 1), "edge 0 has no service"},
		{"bad kind", strings.Replace(good, "fail-close", "hard", 1), "unknown edge kind"},
		{"trailing data", good + "{}", "trailing data"},
		{"huge", strings.Repeat(" ", MaxSnapshotBytes+1), "over the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSnapshot([]byte(tt.give))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrBadSnapshot)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func FuzzParseSnapshot(f *testing.F) {
	f.Add([]byte(`{"format":"errown-depmem","version":1,"bucketWidthNanos":60000000000,"edges":[{"callerProcedure":"a","service":"b","procedure":"c","kind":"fail-close","buckets":[[1,2,1]]}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"format":"errown-depmem","version":1,"bucketWidthNanos":1,"edges":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSnapshot(b)
		if err != nil {
			return
		}
		// What parses restores into a memory of its width and saves again.
		m, err := NewMemory(depmem.Config{Window: time.Duration(s.BucketWidth), Buckets: 1, MinSamples: 1})
		if err != nil {
			return // a width no configuration can have
		}
		require.NoError(t, m.Restore(s), "restore of a parsed snapshot")
		out, err := json.Marshal(m.Snapshot())
		require.NoError(t, err)
		_, err = ParseSnapshot(out)
		require.NoError(t, err, "own snapshot does not parse:\n%s", out)
	})
}

func TestStartIgnoresGarbageSnapshotWithOneWarning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.json")
	require.NoError(t, os.WriteFile(path, []byte("{garbage"), 0o600))
	core, logs := observer.New(zap.WarnLevel)
	m, _ := newMemory(t, depmem.Config{Snapshot: depmem.SnapshotConfig{Path: path}}, WithSinks(obs.Sinks{Logger: zap.New(core)}))
	require.NoError(t, m.Start())
	assert.Empty(t, m.Edges())
	m.Observe(edgeA, true)
	require.NoError(t, m.Stop())
	require.NoError(t, m.Stop(), "stop twice")

	entries := logs.All()
	require.Len(t, entries, 1, "one warning")
	assert.Contains(t, entries[0].Message, "ignoring dependency memory snapshot")
	assert.Contains(t, entries[0].ContextMap()["error"], "bad snapshot")

	// Stop wrote a good snapshot over the garbage.
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s, err := ParseSnapshot(b)
	require.NoError(t, err)
	assert.Len(t, s.Edges, 1)
}

func TestStartLoadsAndSavesPeriodically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.json")
	m, err := NewMemory(depmem.Config{MinSamples: 1, Snapshot: depmem.SnapshotConfig{Path: path, Interval: 10 * time.Millisecond}})
	require.NoError(t, err)
	require.NoError(t, m.Start())
	defer m.Stop()
	m.Observe(edgeA, true)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		s, err := ParseSnapshot(b)
		return err == nil && len(s.Edges) == 1
	}, 5*time.Second, 5*time.Millisecond)

	next, err := NewMemory(depmem.Config{MinSamples: 1, Snapshot: depmem.SnapshotConfig{Path: path}})
	require.NoError(t, err)
	require.NoError(t, next.Start())
	defer next.Stop()
	assert.Equal(t, ownership.KindFailClose, next.Kind(edgeA), "learned before the restart")
}

func TestStopWithoutStart(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{})
	assert.NoError(t, m.Stop())
}

func TestWriteFileAtomicLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for i := 0; i < 3; i++ {
		require.NoError(t, writeFileAtomic(path, []byte{byte(i)}))
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, []byte{2}, b)
	assert.Error(t, writeFileAtomic(filepath.Join(dir, "missing", "f"), nil))
}

// TestCrashWhileWritingSnapshots kills, with SIGKILL, a process that writes
// snapshots as fast as it can, several times, and checks that the file it
// leaves always loads.
func TestCrashWhileWritingSnapshots(t *testing.T) {
	if os.Getenv("ERROWN_SNAPSHOT_WRITER") != "" {
		snapshotWriter(os.Getenv("ERROWN_SNAPSHOT_WRITER"))
		return
	}
	path := filepath.Join(t.TempDir(), "memory.json")
	for round := 0; round < 5; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWhileWritingSnapshots$")
		cmd.Env = append(os.Environ(), "ERROWN_SNAPSHOT_WRITER="+path)
		require.NoError(t, cmd.Start())
		// Let it write for a while: wait until the file exists, then a
		// little longer.
		require.Eventually(t, func() bool { _, err := os.Stat(path); return err == nil }, 10*time.Second, time.Millisecond)
		testtime.Sleep(time.Duration(20+round*15) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		err := cmd.Wait()
		require.Error(t, err, "the writer was killed, it did not finish")

		m, err := NewMemory(depmem.Config{MinSamples: 1})
		require.NoError(t, err)
		require.NoError(t, m.LoadSnapshot(path), "round %d", round)
		require.NotEmpty(t, m.Edges(), "round %d", round)
	}
}

// snapshotWriter is the child process of TestCrashWhileWritingSnapshots.
func snapshotWriter(path string) {
	m, err := NewMemory(depmem.Config{MinSamples: 1})
	if err != nil {
		os.Exit(2)
	}
	for i := 0; ; i++ {
		// Many edges, so a write takes long enough to be interrupted.
		for j := 0; j < 200; j++ {
			m.Observe(edgeA, j%2 == 0)
		}
		if err := m.SaveSnapshot(path); err != nil {
			os.Exit(3)
		}
	}
}

func TestLifecycleOrder(t *testing.T) {
	m, _ := newMemory(t, depmem.Config{})
	require.NoError(t, m.Stop(), "stop before start does nothing")
	require.NoError(t, m.Start())
	assert.ErrorIs(t, m.Start(), ErrStarted)
	require.NoError(t, m.Stop())
	require.NoError(t, m.Stop())
	// goleak (TestMain) checks that the loop started above has exited.
}
