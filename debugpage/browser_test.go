package debugpage_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/debugpage"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/middleware"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/api/transport/transporttest"
	"go.uber.org/yarpc/yarpcerrors"
)

// chromium runs headless Chromium on url with the given extra flags and
// returns its standard output. The flags keep it off the network (the
// machine has none) and out of the user's profile.
func chromium(t *testing.T, url string, flags ...string) []byte {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	require.NotEmpty(t, bin, "headless Chromium is required: `make deps` installs it (apt-get install chromium)")
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(),
	}, flags...)
	args = append(args, url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "chromium: %s", stderr.String())
	return stdout.Bytes()
}

// serveHandler serves h on 127.0.0.1 until the test ends and returns its
// base URL.
func serveHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// screenshotPath is where the page's screenshot goes: $ERROWN_ARTIFACTS
// when set (CI keeps it), else the test's temporary directory.
func screenshotPath(t *testing.T) string {
	dir := os.Getenv("ERROWN_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return filepath.Join(dir, "debug-errown.png")
}

// failing returns an outbound that fails every call, in memory.
func failing() *outboundtest.Outbound {
	return outboundtest.New(outboundtest.Fail(yarpcerrors.UnavailableErrorf("inventory down")))
}

// leaf returns an outbound that answers every call as a failing callee
// running errown would: it claims the failure and reports a storm of one
// request.
func leaf() *outboundtest.Outbound {
	return outboundtest.New(outboundtest.Fail(yarpcerrors.UnavailableErrorf("pricing down"), "errown-claim", "claimed", "errown-storm", "1,1,0,0,0"))
}

type handlerFunc func(context.Context, *transport.Request) error

func (f handlerFunc) Handle(ctx context.Context, req *transport.Request, _ transport.ResponseWriter) error {
	return f(ctx, req)
}

var _ debugpage.Source = (*errown.Middleware)(nil)

// learned returns errown middleware that has served failing requests: its
// memory has learned orders' edge to inventory as fail-close, its budget
// for inventory has counts, and it has decisions to show. Its requests
// came from no errown caller (roots), so each is a storm: place's figures
// are unknown (inventory runs no errown), quote's are known (pricing
// answers as errown does) and show the one retry spent on pricing.
func learned(t *testing.T) *errown.Middleware {
	t.Helper()
	policy := func(service string) retry.PolicyConfig {
		return retry.PolicyConfig{Service: service, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Idempotent: new(true)}
	}
	mw, err := errown.New(errown.Config{
		Memory: depmem.Config{MinSamples: 5},
		Retry:  errown.RetryConfig{Policies: []retry.PolicyConfig{policy("inventory"), policy("pricing")}},
	})
	require.NoError(t, err)
	inventory := middleware.ApplyUnaryOutbound(failing(), mw.Outbound().Unary)
	pricing := middleware.ApplyUnaryOutbound(leaf(), mw.Outbound().Unary)
	in := middleware.ApplyUnaryInbound(handlerFunc(func(ctx context.Context, req *transport.Request) error {
		if req.Procedure == "quote" {
			_, err := pricing.Call(ctx, &transport.Request{Service: "pricing", Procedure: "price"})
			return err
		}
		_, err := inventory.Call(ctx, &transport.Request{Service: "inventory", Procedure: "reserve"})
		return err
	}), mw.Inbound().Unary)
	handle := func(procedure string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := in.Handle(ctx, &transport.Request{Service: "orders", Procedure: procedure, Transport: "http"}, &transporttest.FakeResponseWriter{})
		require.Error(t, err)
	}
	for i := 0; i < 10; i++ {
		handle("place")
	}
	handle("quote")
	return mw
}

// TestPageInChromium renders the debug page of real errown middleware in
// headless Chromium: the learned edge is on the page as the browser sees
// it, and a screenshot is produced.
func TestPageInChromium(t *testing.T) {
	mw := learned(t)
	mux := http.NewServeMux()
	mux.Handle("/debug/errown", debugpage.Handler(mw, "orders"))
	url := serveHandler(t, mux) + "/debug/errown"

	dom := string(chromium(t, url, "--dump-dom"))
	for _, want := range []string{
		"errown · orders",
		"Mode: <strong>enforce</strong>",
		"<td>place</td><td>inventory::reserve</td>",
		`<span class="kind fail-close">fail-close</span>`,
		`<td class="unclaimed">unclaimed</td>`,
		"retried here",
		"<td>inventory</td>",
		"Storms seen",
		`<td>place</td><td class="failed">failed</td>`,
		// quote: radius 1 (orders retried pricing), blind radius 1,
		// served 3 (orders and two attempts at pricing), blind 3,
		// prevented 0, retries 1.
		`<td>quote</td><td class="failed">failed</td>` + "\n" +
			`<td class="num">1</td><td class="num">1</td><td class="num">3</td><td class="num">3</td><td class="num">0</td><td class="num">1</td>`,
		`<td colspan="6" class="unknown">unknown: a service below runs no errown, or its figures were lost</td>`,
	} {
		assert.Contains(t, dom, want)
	}

	path := screenshotPath(t)
	chromium(t, url, "--screenshot="+path, "--window-size=1100,800")
	png, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(png), 5000, "a real picture, not an empty one")
	assert.Equal(t, []byte("\x89PNG\r\n\x1a\n"), png[:8])
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
