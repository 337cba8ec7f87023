// Package depcontract holds what errown needs of yarpc and tally that
// neither offers as API: the middleware inside a yarpc chain (to check,
// at start, that errown's inbound middleware reached the dispatcher) and
// whether a tally.Scope is one of tally's own (whose Close has tally drop
// an evicted edge's series). Nothing else in errown reflects on a
// dependency's types, nor writes into the maps of a transport.Headers it
// did not build itself through With (TestNoHeaderMapWrites).
//
// Each use is pinned to the versions errown was checked against
// (TestPinnedVersions fails when go.mod moves either), and checks the
// shape it relies on when it runs: a shape that moved is an error
// (ErrMoved), never a silent wrong answer. The request path does not use
// it.
package depcontract
