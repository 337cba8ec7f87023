package retrypeer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/errown/errown/internal/reqlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/config"
	"go.uber.org/yarpc/api/peer"
	yarpcpeer "go.uber.org/yarpc/peer"
	"go.uber.org/yarpc/peer/roundrobin"
	"go.uber.org/yarpc/transport/grpc"
	"go.uber.org/yarpc/transport/http"
	"go.uber.org/yarpc/transport/tchannel"
	"go.uber.org/yarpc/yarpcconfig"
)

// outboundChooser loads yarpcYAML (a service "caller" with an outbound
// "callee") on a configurator set up by register and returns the
// callee's unary outbound's chooser.
func outboundChooser(t *testing.T, register func(*yarpcconfig.Configurator), yarpcYAML string) peer.Chooser {
	t.Helper()
	c := yarpcconfig.New()
	c.MustRegisterTransport(http.TransportSpec())
	c.MustRegisterTransport(grpc.TransportSpec())
	c.MustRegisterTransport(tchannel.TransportSpec())
	register(c)
	cfg, err := c.LoadConfigFromYAML("caller", strings.NewReader(yarpcYAML))
	require.NoError(t, err)
	out, ok := cfg.Outbounds["callee"].Unary.(interface{ Chooser() peer.Chooser })
	require.True(t, ok, "the outbound is %T", cfg.Outbounds["callee"].Unary)
	return out.Chooser()
}

func TestRegisterPeerListsWrapsYAMLLists(t *testing.T) {
	tests := []struct {
		transport, list string
	}{
		{"http", "round-robin"},
		{"http", "fewest-pending-requests"},
		{"http", "random"},
		{"http", "two-random-choices"},
		{"grpc", "round-robin"},
		{"tchannel", "fewest-pending-requests"},
	}
	for _, tt := range tests {
		t.Run(tt.transport+" "+tt.list, func(t *testing.T) {
			chooser := outboundChooser(t, RegisterPeerLists, `
outbounds:
  callee:
    `+tt.transport+`:
      `+tt.list+`:
        peers: [127.0.0.1:8081, 127.0.0.1:8082, 127.0.0.1:8083]
`)
			bound, ok := chooser.(*yarpcpeer.BoundChooser)
			require.True(t, ok, "the chooser is %T", chooser)
			_, ok = bound.ChooserList().(*Chooser)
			assert.True(t, ok, "the bound list is %T, not errown's", bound.ChooserList())
		})
	}
}

func TestWithoutRegisterYAMLListsAreYarpcs(t *testing.T) {
	// What RegisterPeerLists changes: yarpc's own spec builds its own list.
	chooser := outboundChooser(t, func(c *yarpcconfig.Configurator) {
		c.MustRegisterPeerList(roundrobin.Spec())
	}, `
outbounds:
  callee:
    http:
      round-robin:
        peers: [127.0.0.1:8081, 127.0.0.1:8082]
`)
	bound, ok := chooser.(*yarpcpeer.BoundChooser)
	require.True(t, ok, "the chooser is %T", chooser)
	assert.IsType(t, &roundrobin.List{}, bound.ChooserList())
}

func TestSpecKeepsTheListsConfiguration(t *testing.T) {
	// The wrapped spec reads the same keys: a bad capacity is still
	// yarpc's error, and an unknown key still fails.
	for _, give := range []string{"capacity: -1", "nosuchkey: 1"} {
		c := yarpcconfig.New()
		c.MustRegisterTransport(http.TransportSpec())
		RegisterPeerLists(c)
		_, err := c.LoadConfigFromYAML("caller", strings.NewReader(`
outbounds:
  callee:
    http:
      round-robin:
        peers: [127.0.0.1:8081]
        `+give+`
`))
		assert.Error(t, err, give)
	}
}

func TestSpecWrappedListSteersRetries(t *testing.T) {
	// The list a wrapped spec builds chooses as a Chooser does: a retry of
	// a call goes to a peer its first attempt did not reach.
	spec := Spec(roundrobin.Spec())
	build, ok := spec.BuildPeerList.(func(roundrobin.Configuration, peer.Transport, *yarpcconfig.Kit) (peer.ChooserList, error))
	require.True(t, ok, "BuildPeerList is %T", spec.BuildPeerList)
	list, err := build(roundrobin.Configuration{}, transportOf{}, nil)
	require.NoError(t, err)
	c, ok := list.(*Chooser)
	require.True(t, ok, "the list is %T", list)
	startList(t, c, 3)
	for range 10 {
		ctx, _ := reqlog.NewRouteContext(context.Background())
		first := choose(t, c, ctx)
		choose(t, c, context.Background())
		choose(t, c, context.Background())
		assert.NotEqual(t, first, choose(t, c, ctx))
	}
}

func TestSpecPassesErrorsAndOddShapes(t *testing.T) {
	errBuild := errors.New("no list")
	spec := Spec(yarpcconfig.PeerListSpec{
		Name: "failing",
		BuildPeerList: func(struct{}, peer.Transport, *yarpcconfig.Kit) (peer.ChooserList, error) {
			return nil, errBuild
		},
	})
	build := spec.BuildPeerList.(func(struct{}, peer.Transport, *yarpcconfig.Kit) (peer.ChooserList, error))
	list, err := build(struct{}{}, transportOf{}, nil)
	assert.ErrorIs(t, err, errBuild)
	assert.Nil(t, list)

	// Not a function of the right shape: left for the Configurator to
	// reject, with its own error.
	odd := Spec(yarpcconfig.PeerListSpec{Name: "odd", BuildPeerList: 42})
	assert.Equal(t, 42, odd.BuildPeerList)
	assert.Error(t, yarpcconfig.New().RegisterPeerList(odd))
}

func TestSpecDoesNotWrapTwice(t *testing.T) {
	twice := Spec(Spec(roundrobin.Spec()))
	build := twice.BuildPeerList.(func(roundrobin.Configuration, peer.Transport, *yarpcconfig.Kit) (peer.ChooserList, error))
	list, err := build(roundrobin.Configuration{}, transportOf{}, nil)
	require.NoError(t, err)
	_, nested := list.(*Chooser).inner.(*Chooser)
	assert.False(t, nested)
}

func TestRegisterPeerListsFromConfigYAML(t *testing.T) {
	// The README's wiring: yarpc's section of a go.uber.org/config YAML,
	// populated into a map, loaded with errown's lists registered.
	y, err := config.NewYAML(config.Source(strings.NewReader(`
yarpc:
  outbounds:
    callee:
      http:
        round-robin:
          peers: [127.0.0.1:8081, 127.0.0.1:8082]
`)))
	require.NoError(t, err)
	c := yarpcconfig.New()
	c.MustRegisterTransport(http.TransportSpec())
	RegisterPeerLists(c)
	var raw map[string]any
	require.NoError(t, y.Get("yarpc").Populate(&raw))
	cfg, err := c.LoadConfig("caller", raw)
	require.NoError(t, err)
	chooser := cfg.Outbounds["callee"].Unary.(*http.Outbound).Chooser()
	assert.IsType(t, &Chooser{}, chooser.(*yarpcpeer.BoundChooser).ChooserList())
}
