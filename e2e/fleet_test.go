package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/errowntest"
	"github.com/errown/errown/internal/testtime"
	"github.com/errown/errown/ownership"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/uber-go/tally/v4"
	promreporter "github.com/uber-go/tally/v4/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// instance is one process's worth of metrics: a tally root scope reporting
// to its own Prometheus registry, served on 127.0.0.1 for scraping.
type instance struct {
	scope tally.Scope
	addr  string
}

func newInstance(t *testing.T) instance {
	t.Helper()
	reporter := promreporter.NewReporter(promreporter.Options{Registerer: prom.NewRegistry()})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       promreporter.DefaultSeparator,
		SanitizeOptions: &promreporter.DefaultSanitizerOpts,
	}, 50*time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: reporter.HTTPHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		_ = closer.Close()
	})
	return instance{scope: scope, addr: ln.Addr().String()}
}

// prometheusServer is a real Prometheus on 127.0.0.1 scraping targets
// every 200ms.
type prometheusServer struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startPrometheus(t *testing.T, targets ...string) *prometheusServer {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "the prometheus server is required: `make deps` installs it (apt-get install prometheus)")
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, target := range targets {
		quoted[i] = fmt.Sprintf("%q", target)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 200ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: errown
    scrape_interval: 200ms
    scrape_timeout: 150ms
    static_configs:
      - targets: [%s]
`, strings.Join(quoted, ", "))
	configPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(configPath, []byte(config), 0o600))
	addr := freeAddr(t)
	cmd := exec.Command(bin,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	p := &prometheusServer{url: "http://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	require.Eventually(t, func() bool {
		res, err := _http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, testtime.Scale(30*time.Second), 50*time.Millisecond, "prometheus did not become ready; its log is in %s", dir)
	return p
}

func (p *prometheusServer) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// _http is the client for Prometheus's API: no idle connections left
// behind for goleak to find.
var _http = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

// freeAddr returns a 127.0.0.1 address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// query runs a PromQL query and returns the raw response body.
func (p *prometheusServer) query(q string) (string, error) {
	res, err := _http.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

// TestFleetMemory runs two instances of a service, both scraped by a real
// Prometheus. Only instance 1 calls the failing dependency; instance 2
// learns the edge's kind from the fleet's counts. Then Prometheus goes
// away and both instances keep serving on local memory.
func TestFleetMemory(t *testing.T) {
	const (
		api1, api2, db = "api-1", "api-2", "db"
		minSamples     = 20
	)
	in1, in2 := newInstance(t), newInstance(t)
	server := startPrometheus(t, in1.addr, in2.addr)

	var dbDown atomic.Bool
	dbDown.Store(true)
	mesh := errowntest.NewMesh(t)
	mesh.Start(errowntest.ServiceConfig{Name: db, Transport: errowntest.HTTP, Handler: func(_ context.Context, _ *errowntest.Client, body []byte) ([]byte, error) {
		if dbDown.Load() {
			return nil, fmt.Errorf("db down")
		}
		return body, nil
	}})
	mesh.Start(errowntest.ServiceConfig{
		Name: api1, Transport: errowntest.HTTP, Callees: []string{db}, Handler: errowntest.Forward,
		Errown:        &errown.Config{Memory: depmem.Config{MinSamples: minSamples}},
		ErrownOptions: []errown.Option{errown.WithScope(in1.scope)},
	})
	core, logs := observer.New(zap.InfoLevel)
	mesh.Start(errowntest.ServiceConfig{
		Name: api2, Transport: errowntest.HTTP, Callees: []string{db}, Handler: errowntest.Echo,
		Errown: &errown.Config{Memory: depmem.Config{
			MinSamples: minSamples,
			Window:     time.Minute,
			Fleet: depmem.FleetConfig{
				URL:      server.url,
				Interval: 100 * time.Millisecond,
				Timeout:  time.Second,
				Selector: `job="errown"`,
			},
		}},
		ErrownOptions: []errown.Option{errown.WithScope(in2.scope), errown.WithLogger(zap.New(core))},
	})

	// One failure first, so the series exists before the rest arrive:
	// increase() counts only what happens between samples.
	require.Error(t, mesh.Call(context.Background(), api1, nil).Err)
	require.Eventually(t, func() bool {
		body, err := server.query(`errown_depmem_callee_failures{job="errown"}`)
		return err == nil && strings.Contains(body, `"callee_service":"db"`)
	}, testtime.Scale(30*time.Second), 100*time.Millisecond, "prometheus never scraped instance 1's counter")
	for i := 0; i < 2*minSamples; i++ {
		require.Error(t, mesh.Call(context.Background(), api1, nil).Err)
	}

	edge := ownership.Edge{CallerProcedure: "call", Service: db, Procedure: "call"}
	local := mesh.Service(api1).Middleware().Introspect().Dependencies
	require.Len(t, local, 1)
	assert.Equal(t, ownership.KindFailClose, local[0].Kind, "instance 1 learned the edge itself")

	var seen depmem.EdgeView
	require.Eventually(t, func() bool {
		for _, v := range mesh.Service(api2).Middleware().Introspect().Dependencies {
			if v.Edge == edge {
				seen = v
				return v.Kind == ownership.KindFailClose
			}
		}
		return false
	}, testtime.Scale(30*time.Second), 100*time.Millisecond, "instance 2 never classified the edge from the fleet; last view %+v", seen)
	assert.Equal(t, depmem.SourceFleet, seen.Source)
	assert.GreaterOrEqual(t, seen.CalleeFailures, int64(minSamples))
	t.Logf("instance 2 sees %v as %v from the fleet: ratio %.2f over %d callee failures", edge, seen.Kind, seen.Ratio, seen.CalleeFailures)

	// Prometheus goes away; both instances keep serving, instance 2 on
	// local memory, with one warning for the outage.
	server.stop()
	dbDown.Store(false)
	require.Eventually(t, func() bool {
		return len(logs.FilterMessageSnippet("fleet memory unavailable").All()) > 0
	}, testtime.Scale(10*time.Second), 50*time.Millisecond)
	for i := 0; i < 20; i++ {
		for _, svc := range []string{api1, api2} {
			r := mesh.Call(context.Background(), svc, []byte("ping"))
			require.NoError(t, r.Err, "%s after prometheus stopped", svc)
			assert.Equal(t, "ping", string(r.Body))
		}
	}
	time.Sleep(300 * time.Millisecond) // a few more failed polls
	assert.Len(t, logs.FilterMessageSnippet("fleet memory unavailable").All(), 1, "one warning per outage")
	for _, v := range mesh.Service(api2).Middleware().Introspect().Dependencies {
		assert.NotEqual(t, depmem.SourceFleet, v.Source, "fleet data dropped during the outage: %+v", v)
	}
}
