package depmem

import (
	"github.com/errown/errown/ownership"
)

// Source names where an edge's kind came from.
type Source string

// Sources, in order of trust.
const (
	SourceStatic Source = "static"
	SourceFleet  Source = "fleet"
	SourceLocal  Source = "local"
)

// EdgeView is what the memory knows of one edge, for operators.
type EdgeView struct {
	Edge           ownership.Edge     `json:"edge"`
	Kind           ownership.EdgeKind `json:"kind"`
	Ratio          float64            `json:"ratio"`
	CalleeFailures int64              `json:"calleeFailures"`
	JointFailures  int64              `json:"jointFailures"`
	Source         Source             `json:"source"`
}
