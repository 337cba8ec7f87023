package exampleapp_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dashboardMetrics returns every errown metric name the Grafana dashboard
// queries, in its panels and its variables.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "dashboards", "errown.json"))
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(b, &d), "dashboards/errown.json is not valid JSON")
	var exprs []string
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, "panel %q queries nothing", p.Title)
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	names := map[string]bool{}
	for _, e := range exprs {
		for _, m := range regexp.MustCompile(`\berrown_[a-z_]+\b`).FindAllString(e, -1) {
			names[m] = true
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestDashboardMetricsExported runs the example services, makes one error
// travel through them, scrapes each, and checks that every metric the
// dashboard queries is exported. The error is a storm at the root
// (frontend suppresses a retry of orders, which retried inventory), so
// the storm metrics, which exist only once a root request met a storm,
// are exported too.
func TestDashboardMetricsExported(t *testing.T) {
	names := dashboardMetrics(t)
	require.NotEmpty(t, names)
	m := startMesh(t)
	m.inventory.admin(t, http.MethodPost, "/break")
	_, _, err := m.checkout(t)
	require.Error(t, err)

	exported := func() map[string]bool {
		seen := map[string]bool{}
		for _, s := range []*service{m.frontend, m.orders, m.inventory} {
			for _, line := range strings.Split(s.admin(t, http.MethodGet, "/metrics"), "\n") {
				if name, _, ok := strings.Cut(line, "{"); ok && !strings.HasPrefix(line, "#") {
					seen[name] = true
				}
			}
		}
		return seen
	}
	missing := func() []string {
		seen := exported()
		var out []string
		for _, n := range names {
			if !seen[n] {
				out = append(out, n)
			}
		}
		return out
	}
	if !assert.Eventually(t, func() bool { return len(missing()) == 0 }, 10*time.Second, 100*time.Millisecond) {
		// Scraped again: the list at the time of the failure, not of the call.
		require.Failf(t, "metrics the dashboard queries but no service exports", "%v", missing())
	}
	assert.Contains(t, names, "errown_inbound_claimed")
	assert.Subset(t, names, []string{
		"errown_storm_radius_bucket", "errown_storm_blind_radius_bucket", // max radius, errown vs blind
		"errown_storm_radius_sum", "errown_storm_radius_count", // average radius
		"errown_storm_blind_radius_sum", "errown_storm_blind_radius_count",
		"errown_storm_prevented", "errown_storm_retries", "errown_storm_requests", "errown_storm_unknown",
		"errown_retry_prevented", "errown_retry_would_suppress",
		"errown_inbound_failed_after_denied", // what users lost, beside what was prevented
	}, "the storm panels")
	t.Logf("the dashboard queries %d metrics, all exported: %s", len(names), strings.Join(names, " "))
}
