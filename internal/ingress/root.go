package ingress

import (
	"math/rand/v2"

	"github.com/errown/errown/internal/wire"
	"go.uber.org/yarpc/api/transport"
)

// root returns the root key of req: the one its caller sent, or 0 where
// the request enters the mesh (at the edge, or from a caller that sent
// none), whose log mints one when a marked call first needs it. It
// returns too the key admission judges it by: the root key, or for an
// edge request with admission on a new one minted now; 0 (a visit) for a
// request from inside the mesh that came without one.
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
