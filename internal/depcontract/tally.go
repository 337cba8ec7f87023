package depcontract

import (
	"fmt"
	"io"
	"reflect"

	"github.com/uber-go/tally/v4"
)

// _tallyScope is the type of tally's own scopes (*tally.scope in v4.1.17,
// whose Close marks the scope closed, and tally's next report drops it and
// its metrics), taken from tally.NoopScope rather than named.
var _tallyScope = reflect.TypeOf(tally.NoopScope)

var _closerType = reflect.TypeFor[io.Closer]()

// TallyCloser returns s as an io.Closer when s is one of tally's own
// scopes, whose Close only drops s and its metrics at tally's next report;
// another Scope's Close may mean something else, and reports false.
func TallyCloser(s tally.Scope) (io.Closer, bool) {
	if reflect.TypeOf(s) != _tallyScope {
		return nil, false
	}
	c, ok := s.(io.Closer)
	return c, ok
}

// CheckTally returns an error wrapping ErrMoved when tally's own scopes no
// longer have a Close: then TallyCloser closes nothing, and a caller that
// counts on it to drop series keeps them all.
func CheckTally() error { return checkScopeType(_tallyScope) }

func checkScopeType(t reflect.Type) error {
	if t == nil || !t.Implements(_closerType) {
		return fmt.Errorf("%w: tally's scopes (%v) no longer have the Close of tally %s: "+
			"the series of evicted edges stay in tally", ErrMoved, t, _tallyVersion)
	}
	return nil
}
