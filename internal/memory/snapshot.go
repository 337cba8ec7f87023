package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/errown/errown/ownership"
)

// ErrBadSnapshot is wrapped by every error about a snapshot's content.
var ErrBadSnapshot = errors.New("bad snapshot")

// Snapshot is the persisted form of a Memory's local window.
type Snapshot struct {
	Format      string         `json:"format"`
	Version     int            `json:"version"`
	BucketWidth int64          `json:"bucketWidthNanos"`
	Edges       []SnapshotEdge `json:"edges"`
}

// SnapshotEdge is one edge of a Snapshot. Each bucket is
// [time slice, callee failures, joint failures].
type SnapshotEdge struct {
	ownership.Edge
	Kind    ownership.EdgeKind `json:"kind"`
	Buckets [][3]int64         `json:"buckets"`
}

// ParseSnapshot reads and checks a snapshot file. Anything but a
// well-formed snapshot of this format and version is an error wrapping
// ErrBadSnapshot.
func ParseSnapshot(b []byte) (*Snapshot, error) {
	if len(b) > MaxSnapshotBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the %d byte limit", ErrBadSnapshot, len(b), MaxSnapshotBytes)
	}
	var s Snapshot
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the snapshot", ErrBadSnapshot)
	}
	if s.Format != SnapshotFormat {
		return nil, fmt.Errorf("%w: format %q, want %q", ErrBadSnapshot, s.Format, SnapshotFormat)
	}
	if s.Version != SnapshotVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrBadSnapshot, s.Version, SnapshotVersion)
	}
	if s.BucketWidth <= 0 {
		return nil, fmt.Errorf("%w: bucket width %d", ErrBadSnapshot, s.BucketWidth)
	}
	for i, e := range s.Edges {
		if e.Service == "" {
			return nil, fmt.Errorf("%w: edge %d has no service", ErrBadSnapshot, i)
		}
		for j, b := range e.Buckets {
			if b[1] < 0 || b[2] < 0 || b[2] > b[1] {
				return nil, fmt.Errorf("%w: edge %d bucket %d: counts %d, %d", ErrBadSnapshot, i, j, b[1], b[2])
			}
		}
	}
	return &s, nil
}

// Snapshot returns the local window of every edge.
func (m *Memory) Snapshot() Snapshot {
	s := Snapshot{Format: SnapshotFormat, Version: SnapshotVersion, BucketWidth: m.width}
	now := m.slice()
	m.mu.RLock()
	for e, st := range m.edges {
		live := st.w.live(now)
		kind := st.loadKind()
		if len(live) == 0 {
			continue
		}
		se := SnapshotEdge{Edge: e, Kind: kind, Buckets: make([][3]int64, len(live))}
		for i, b := range live {
			se.Buckets[i] = [3]int64{b.slice, b.failures, b.joint}
		}
		s.Edges = append(s.Edges, se)
	}
	m.mu.RUnlock()
	sort.Slice(s.Edges, func(i, j int) bool { return edgeLess(s.Edges[i].Edge, s.Edges[j].Edge) })
	return s
}

// Restore adds a snapshot's counts to the memory, refusing one of another
// bucket width. Edges past MaxEdges with no idle edge to evict are dropped
// (depmem.edges_overflow); a restored edge counts as observed now.
func (m *Memory) Restore(s *Snapshot) error {
	if s.BucketWidth != m.width {
		return fmt.Errorf("%w: bucket width %d ns, configured %d ns", ErrBadSnapshot, s.BucketWidth, m.width)
	}
	now := m.slice()
	for _, se := range s.Edges {
		st := m.touchedEdge(se.Edge, now)
		if st == nil {
			m.overflow.Inc(1)
			continue
		}
		for _, b := range se.Buckets {
			st.w.restore(bucket{slice: b[0], failures: b[1], joint: b[2]})
		}
		st.kind.Store(uint32(se.Kind))
	}
	return nil
}

// SaveSnapshot writes the memory's snapshot to path atomically.
func (m *Memory) SaveSnapshot(path string) error {
	b, err := json.Marshal(m.Snapshot())
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b)
}

// LoadSnapshot restores the snapshot at path; a missing file is a first
// start, not an error.
func (m *Memory) LoadSnapshot(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSnapshotBytes+1))
	if err != nil {
		return fmt.Errorf("read snapshot %s: %w", path, err)
	}
	s, err := ParseSnapshot(b)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	if err := m.Restore(s); err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic writes b to path so readers, and a restart after a
// crash, see the old or new content, never a part: temp file in the same
// directory, fsync, rename, fsync the directory.
func writeFileAtomic(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Snapshot file format identifiers.
const (
	SnapshotFormat  = "errown-depmem"
	SnapshotVersion = 1
	// MaxSnapshotBytes is the largest snapshot file read.
	MaxSnapshotBytes = 64 << 20
)
