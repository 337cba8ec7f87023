package depcontract

import "errors"

// The versions of yarpc and tally whose unexported types this package was
// checked against: TestPinnedVersions fails when go.mod moves either, so
// whoever moves it checks the shapes again and updates these.
const (
	_yarpcVersion = "v1.81.0"
	_tallyVersion = "v4.1.17"
)

// ErrMoved is the error of a check that found a dependency's type shaped
// otherwise than expected: it moved past the version checked against.
var ErrMoved = errors.New("errown: a dependency's internals moved")
