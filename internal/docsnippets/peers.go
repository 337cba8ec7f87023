package docsnippets

// README.md, "Several instances of a callee".

import (
	"github.com/errown/errown/retrypeer"
	"go.uber.org/yarpc/api/peer"
	yarpcpeer "go.uber.org/yarpc/peer"
	"go.uber.org/yarpc/peer/hostport"
	"go.uber.org/yarpc/peer/roundrobin"
	"go.uber.org/yarpc/transport/http"
)

func paymentsOutbound(t *http.Transport, instances []string) *http.Outbound {
	ids := make([]peer.Identifier, 0, len(instances))
	for _, hp := range instances { // "10.0.0.1:8081", ...
		ids = append(ids, hostport.PeerIdentifier(hp))
	}
	list := yarpcpeer.Bind(roundrobin.New(t), yarpcpeer.BindPeers(ids))
	return t.NewOutbound(retrypeer.New(list))
}

var _ = paymentsOutbound
