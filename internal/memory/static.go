package memory

import (
	"errors"
	"fmt"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/ownership"
	"go.uber.org/multierr"
)

// Static is a Classifier over declarations. The most specific declaration
// wins: an exact edge first, then any caller procedure, then any callee
// procedure, then both wildcards.
type Static struct {
	kinds   map[ownership.Edge]ownership.EdgeKind
	next    Classifier
	learner Learner // next, when it is one
}

var _ Learner = (*Static)(nil)

// NewStatic compiles decls; unmatched edges are asked of next (Unknown if
// nil). Every invalid declaration is reported by index under
// "dependencies".
func NewStatic(decls []depmem.Declaration, next Classifier) (*Static, error) {
	if next == nil {
		next = Unknown{}
	}
	s := &Static{kinds: make(map[ownership.Edge]ownership.EdgeKind, len(decls)), next: next}
	s.learner, _ = next.(Learner)
	var errs error
	for i, d := range decls {
		kind, err := declaredKind(d.Kind)
		if err != nil {
			errs = multierr.Append(errs, fmt.Errorf("dependencies[%d].kind: %w", i, err))
		}
		if d.Service == "" || d.Service == depmem.Wildcard {
			errs = multierr.Append(errs, fmt.Errorf("dependencies[%d].service: a callee service is required, got %q", i, d.Service))
		}
		e := ownership.Edge{CallerProcedure: orWildcard(d.CallerProcedure), Service: d.Service, Procedure: orWildcard(d.Procedure)}
		if _, dup := s.kinds[e]; dup {
			errs = multierr.Append(errs, fmt.Errorf("dependencies[%d]: edge %v declared twice", i, e))
		}
		s.kinds[e] = kind
	}
	if errs != nil {
		return nil, errs
	}
	return s, nil
}

// declaredKind is the kind a Declaration states, which it must.
func declaredKind(k *ownership.EdgeKind) (ownership.EdgeKind, error) {
	if k == nil {
		return ownership.KindUnknown, errors.New("must be set: fail-close, fail-open or unknown")
	}
	switch *k {
	case ownership.KindFailClose, ownership.KindFailOpen, ownership.KindUnknown:
		return *k, nil
	default:
		return ownership.KindUnknown, fmt.Errorf("unknown edge kind %d (want fail-close, fail-open or unknown)", uint8(*k))
	}
}

func orWildcard(s string) string {
	if s == "" {
		return depmem.Wildcard
	}
	return s
}

// Kind returns the kind of the most specific declaration matching e, or
// asks the next Classifier.
func (s *Static) Kind(e ownership.Edge) ownership.EdgeKind {
	if kind, ok := s.declared(e); ok {
		return kind
	}
	return s.next.Kind(e)
}

// Observe implements Observer: it tells next, if it learns (a Memory), of
// a failed call on e, declared edges too so the memory's view stays whole.
func (s *Static) Observe(e ownership.Edge, callerFailed bool) {
	if s.learner != nil {
		s.learner.Observe(e, callerFailed)
	}
}

// Learn implements Learner: e's declared kind, else next's, observing the
// failure as Observe does.
func (s *Static) Learn(e ownership.Edge, callerFailed bool) ownership.EdgeKind {
	kind, declared := s.declared(e)
	switch {
	case s.learner != nil:
		learned := s.learner.Learn(e, callerFailed)
		if !declared {
			kind = learned
		}
	case !declared:
		kind = s.next.Kind(e)
	}
	return kind
}

// declared returns the kind of the most specific declaration matching e.
func (s *Static) declared(e ownership.Edge) (ownership.EdgeKind, bool) {
	if len(s.kinds) == 0 {
		return ownership.KindUnknown, false
	}
	for _, k := range [...]ownership.Edge{
		e,
		{CallerProcedure: depmem.Wildcard, Service: e.Service, Procedure: e.Procedure},
		{CallerProcedure: e.CallerProcedure, Service: e.Service, Procedure: depmem.Wildcard},
		{CallerProcedure: depmem.Wildcard, Service: e.Service, Procedure: depmem.Wildcard},
	} {
		if kind, ok := s.kinds[k]; ok {
			return kind, true
		}
	}
	return ownership.KindUnknown, false
}

// Viewer lists what a Classifier knows, for operators.
type Viewer interface {
	Edges() []depmem.EdgeView
}

// Edges returns the declared edges (source static), then what next knows,
// if a Viewer, of undeclared edges.
func (s *Static) Edges() []depmem.EdgeView {
	out := make([]depmem.EdgeView, 0, len(s.kinds))
	for e, k := range s.kinds {
		out = append(out, depmem.EdgeView{Edge: e, Kind: k, Source: depmem.SourceStatic})
	}
	sortViews(out)
	if v, ok := s.next.(Viewer); ok {
		for _, ev := range v.Edges() {
			if _, declared := s.declared(ev.Edge); !declared {
				out = append(out, ev)
			}
		}
	}
	return out
}
