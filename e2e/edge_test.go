package e2e_test

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/errown/errown"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/inbound"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// _curl is the caller name the outside client of TestEdgeKeepsHeadersInside
// sends.
const _curl = "curl"

// TestEdgeKeepsHeadersInside: an outside client that runs no errown
// (net/http, straight to A's HTTP inbound) sends errown's attempt header
// to A of A → B → C. Without an edge declared it gets errown's headers
// back: the storm figures of the mesh below A on a success, and the claim
// and the storm on a failure. With A's edge declared, by transport,
// procedure or caller, it gets none, on a success and on a failure, and A
// still answers as it did.
func TestEdgeKeepsHeadersInside(t *testing.T) {
	edges := []struct {
		name string
		give inbound.EdgeConfig
		want bool // errown's headers come back
	}{
		{name: "no edge", want: true},
		{name: "edge by transport", give: inbound.EdgeConfig{Transports: []string{errowntest.HTTP}}},
		{name: "edge by procedure", give: inbound.EdgeConfig{Procedures: []string{errowntest.Procedure}}},
		{name: "edge by caller", give: inbound.EdgeConfig{Callers: []string{_curl}}},
		{name: "edge for another caller", give: inbound.EdgeConfig{Callers: []string{"gateway"}}, want: true},
	}
	meshes := []struct {
		name     string
		fails    bool
		wantCode int // HTTP status of A's response
	}{
		{name: "healthy", wantCode: http.StatusOK},
		{name: "C failing", fails: true, wantCode: http.StatusServiceUnavailable},
	}
	for _, mesh := range meshes {
		for _, edge := range edges {
			t.Run(mesh.name+"/"+edge.name, func(t *testing.T) {
				m := errowntest.NewMesh(t)
				c := errowntest.Handler(errowntest.Echo)
				if mesh.fails {
					c = fail(_c)
				}
				m.Start(errowntest.ServiceConfig{Name: _c, Transport: errowntest.HTTP, Errown: &errown.Config{}, Handler: c})
				m.Start(errowntest.ServiceConfig{Name: _b, Transport: errowntest.HTTP, Errown: &errown.Config{}, Callees: []string{_c}, Handler: errowntest.Forward})
				a := m.Start(errowntest.ServiceConfig{Name: _a, Transport: errowntest.HTTP, Errown: &errown.Config{InboundConfig: errown.InboundConfig{Edge: edge.give}}, Callees: []string{_b}, Handler: errowntest.Forward})

				code, own := curl(t, a.Addr())
				assert.Equal(t, mesh.wantCode, code, "A answers as it would")
				assert.Equal(t, edge.want, len(own) > 0, "errown's headers on A's response: %v", own)
				t.Logf("errown's headers on A's response: %v", own)
				if mesh.fails && edge.want {
					assert.Contains(t, strings.Join(own, "\n"), "Rpc-Header-Errown-Claim", "a failure's claim")
				}
			})
		}
	}
}

// curl calls Procedure on the service at addr over HTTP as a client that
// runs no errown, sending errown's attempt header, and returns the HTTP
// status and errown's headers on the response, as "name: value", sorted.
func curl(t *testing.T, addr string) (int, []string) {
	t.Helper()
	req, err := http.NewRequestWithContext(callCtx(t), http.MethodPost, "http://"+addr+"/", bytes.NewReader([]byte("hello")))
	require.NoError(t, err)
	for k, v := range map[string]string{
		"Rpc-Caller":                _curl,
		"Rpc-Service":               _a,
		"Rpc-Procedure":             errowntest.Procedure,
		"Rpc-Encoding":              "raw",
		"Context-Ttl-Ms":            "5000",
		"Rpc-Header-Errown-Attempt": "1",
	} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var own []string
	for k, vs := range resp.Header {
		if strings.HasPrefix(strings.ToLower(k), "rpc-header-errown-") {
			own = append(own, k+": "+strings.Join(vs, ","))
		}
	}
	slices.Sort(own)
	return resp.StatusCode, own
}
