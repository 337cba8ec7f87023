package depmem

// Snapshot file format identifiers.
const (
	SnapshotFormat  = "errown-depmem"
	SnapshotVersion = 1
	// MaxSnapshotBytes is the largest snapshot file read.
	MaxSnapshotBytes = 64 << 20
)
