package retrypeer_test

import (
	"fmt"
	"strings"

	"github.com/errown/errown/retrypeer"
	"go.uber.org/yarpc/api/peer"
	yarpcpeer "go.uber.org/yarpc/peer"
	"go.uber.org/yarpc/peer/hostport"
	"go.uber.org/yarpc/peer/roundrobin"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/yarpcconfig"
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

// Outbounds declared in yarpc's YAML: the same YAML, yarpc's round-robin
// list wrapped in a Chooser.
func ExampleRegisterPeerLists() {
	c := yarpcconfig.New()
	c.MustRegisterTransport(http.TransportSpec())
	retrypeer.RegisterPeerLists(c)
	cfg, err := c.LoadConfigFromYAML("checkout", strings.NewReader(`
outbounds:
  payments:
    http:
      round-robin:
        peers: [127.0.0.1:8081, 127.0.0.1:8082, 127.0.0.1:8083]
`))
	if err != nil {
		panic(err)
	}
	chooser := cfg.Outbounds["payments"].Unary.(*http.Outbound).Chooser()
	fmt.Printf("%T\n", chooser.(*yarpcpeer.BoundChooser).ChooserList())
	// Output: *retrypeer.Chooser
}
