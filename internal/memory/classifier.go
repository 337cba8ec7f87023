package memory

import (
	"github.com/errown/errown/ownership"
)

// Classifier says what kind an edge is. Implementations are safe for
// concurrent use and cheap: the inbound middleware calls Kind once per
// failed outbound call of a failed request.
type Classifier interface {
	Kind(ownership.Edge) ownership.EdgeKind
}

// Learner is a Classifier that also learns from the failures it is asked
// about: Memory, and Static over a Memory.
type Learner interface {
	Classifier
	Observer
	// Learn returns the kind of e as Kind would, then counts one failed
	// call on e as Observe would, in one step.
	Learn(e ownership.Edge, callerFailed bool) ownership.EdgeKind
}

// Unknown is a Classifier that knows nothing: every edge is unknown.
type Unknown struct{}

var _ Classifier = Unknown{}

// Kind returns ownership.KindUnknown.
func (Unknown) Kind(ownership.Edge) ownership.EdgeKind { return ownership.KindUnknown }
