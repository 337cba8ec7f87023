package ingress

import (
	"math/rand/v2"

	"github.com/errown/errown/internal/wire"
	"go.uber.org/yarpc/api/transport"
)

// root returns req's root key: its caller's, or 0 where it enters the
// mesh (its log mints one when a marked call needs it). admit is the key
// admission judges it by: the root key; for an edge request with
// admission on, one minted now; 0 (a visit) for an in-mesh request
// without one.
func (m *Middleware) root(req *transport.Request, edge bool) (root, admit uint64) {
	if !edge {
		if k, ok := wire.ParseRoot(req.Headers.Items()[m.hdr.Root]); ok {
			return k, k
		}
		return 0, 0
	}
	if m.admission == nil {
		return 0, 0
	}
	k := m.mint()
	return k, k
}

// mintRoot returns a new root key: 64 random bits, never 0.
func mintRoot() uint64 { return rand.Uint64() | 1 }
