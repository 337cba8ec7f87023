package testmesh_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/internal/testmesh"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc"
	"go.uber.org/yarpc/encoding/raw"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func echo(d *yarpc.Dispatcher, _ *errown.Middleware) error {
	d.Register(raw.Procedure("call", func(_ context.Context, body []byte) ([]byte, error) { return body, nil }))
	return nil
}

// start starts a node and stops it when the test ends.
func start(t *testing.T, cfg testmesh.Config) *testmesh.Node {
	t.Helper()
	n, err := testmesh.Start(cfg)
	require.NoError(t, err, "start %s", cfg.Name)
	t.Cleanup(func() { assert.NoError(t, n.Stop(), "stop %s", cfg.Name) })
	return n
}

// callYARPC calls the yarpc node n from outside.
func callYARPC(t *testing.T, n *testmesh.Node) string {
	t.Helper()
	d, err := testmesh.NewClient("outside", testmesh.TransportOptions{}, nil, testmesh.Callee{Name: n.Name(), Kind: n.Kind(), Addr: n.Addr()})
	require.NoError(t, err)
	defer func() { assert.NoError(t, d.Stop()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := raw.New(d.ClientConfig(n.Name())).Call(ctx, "call", []byte("hi"))
	require.NoError(t, err, "call %s", n.Name())
	return string(res)
}

func TestYARPCNodeRestartsOnItsPort(t *testing.T) {
	for _, kind := range testmesh.Transports {
		t.Run(kind, func(t *testing.T) {
			cfg := testmesh.Config{Name: "svc-" + kind, Kind: kind, Errown: &errown.Config{}, Register: echo}
			n, err := testmesh.Start(cfg)
			require.NoError(t, err)
			assert.NotNil(t, n.Middleware(), "errown")
			assert.NotNil(t, n.Dispatcher(), "dispatcher")
			assert.Equal(t, "hi", callYARPC(t, n))
			require.NoError(t, n.Stop())
			require.NoError(t, n.Stop(), "a second Stop")

			cfg.Listen = n.Addr()
			again := start(t, cfg)
			assert.Equal(t, n.Addr(), again.Addr(), "restarted on its port")
			assert.Equal(t, "hi", callYARPC(t, again))
		})
	}
}

func TestGRPCGoNode(t *testing.T) {
	n := start(t, testmesh.Config{Name: "svc-g", Kind: testmesh.GRPCGo, Errown: &errown.Config{}, Graceful: true,
		RegisterGRPC: func(s *grpc.Server, mw *errown.Middleware) error {
			assert.NotNil(t, mw, "errown")
			healthpb.RegisterHealthServer(s, health.NewServer())
			return nil
		}})
	assert.Nil(t, n.Dispatcher())
	cc, err := grpc.NewClient("passthrough:///"+n.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { assert.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, res.GetStatus())
}

func TestNetHTTPNode(t *testing.T) {
	var outer int
	n := start(t, testmesh.Config{Name: "svc-h", Kind: testmesh.NetHTTP,
		Handler: func(mw *errown.Middleware) (http.Handler, error) {
			assert.Nil(t, mw, "no errown")
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }), nil
		},
		OuterHandler: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { outer++; h.ServeHTTP(w, r) })
		}})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	res, err := (&http.Client{Transport: base}).Get("http://" + n.Addr() + "/")
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, "ok", string(b))
	assert.Equal(t, 1, outer, "the outer handler served")
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		give testmesh.Config
		want string
	}{
		{name: "kind", give: testmesh.Config{Name: "svc-a", Kind: "smoke"}, want: `unknown transport "smoke"`},
		{name: "short name", give: testmesh.Config{Name: "a", Kind: testmesh.HTTP}, want: "service name"},
		{name: "errown config", give: testmesh.Config{Name: "svc-a", Kind: testmesh.HTTP, Errown: &errown.Config{Mode: "loud"}}, want: "errown: "},
		{name: "grpc-go serves nothing", give: testmesh.Config{Name: "svc-a", Kind: testmesh.GRPCGo}, want: "nothing to serve"},
		{name: "net/http serves nothing", give: testmesh.Config{Name: "svc-a", Kind: testmesh.NetHTTP}, want: "nothing to serve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := testmesh.Start(tt.give)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
