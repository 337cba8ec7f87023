package retrypeer_test

import (
	"fmt"

	"github.com/errown/errown/retrypeer"
	"go.uber.org/yarpc/api/peer"
	yarpcpeer "go.uber.org/yarpc/peer"
	"go.uber.org/yarpc/peer/hostport"
	"go.uber.org/yarpc/peer/roundrobin"
	"go.uber.org/yarpc/transport/http"
)

// A callee with three instances behind yarpc's round-robin list, errown's
// retries of its calls sent to an instance their earlier attempts did not
// reach.
func Example() {
	t := http.NewTransport()
	ids := []peer.Identifier{
		hostport.PeerIdentifier("127.0.0.1:8081"),
		hostport.PeerIdentifier("127.0.0.1:8082"),
		hostport.PeerIdentifier("127.0.0.1:8083"),
	}
	list := yarpcpeer.Bind(roundrobin.New(t), yarpcpeer.BindPeers(ids))
	out := t.NewOutbound(retrypeer.New(list))
	fmt.Println(out.Chooser() != nil)
	// Output: true
}
