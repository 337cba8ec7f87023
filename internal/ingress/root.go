package ingress

import (
	"math/rand/v2"

	"github.com/errown/errown/internal/wire"
	"go.uber.org/yarpc/api/transport"
)

// root returns the root key of req, an edge request when edge is set:
// the key its caller sent in the root header, or 0 where the request
// enters the mesh (at the edge, whose headers are not errown's, or from a
// caller that sent none): its log then mints one when a marked call
// first carries it on (reqlog.Log.Root), so that the steady state mints
// none. It returns too the key admission judges it by: its root key; a
// new one for an edge request, minted now, when admission is on; 0
// (none: admitted as a visit) for a request from inside the mesh that
// came without one, whose caller does not run errown and whose other
// visits carry no key either.
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
