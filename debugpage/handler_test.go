package debugpage

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/ownership"
	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fakeSource struct {
	deps      []depmem.EdgeView
	budgets   []retry.BudgetView
	decisions []inbound.Decision
	storms    []inbound.Storm
	losses    inbound.Losses
	instances []retry.InstanceView
	modes     retry.Modes
}

func (f fakeSource) Introspect() errown.Status {
	return errown.Status{
		Modes: f.modes, Dependencies: f.deps, Budgets: f.budgets, Decisions: f.decisions,
		Storms: f.storms, Losses: f.losses, Instances: f.instances,
	}
}

var (
	now  = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	full = fakeSource{
		deps: []depmem.EdgeView{{
			Edge: ownership.Edge{CallerProcedure: "place", Service: "inventory", Procedure: "reserve"},
			Kind: ownership.KindFailClose, Ratio: 0.95, CalleeFailures: 40, JointFailures: 38, Source: depmem.SourceLocal,
		}},
		budgets: []retry.BudgetView{{Callee: "inventory", Requests: 100, Retries: 3, Allowed: 110, Ratio: 0.1, MinPerSecond: 10, Window: 10 * time.Second}},
		decisions: []inbound.Decision{{Time: now.Add(-1500 * time.Millisecond), Procedure: "place", Code: "unavailable", Claim: "unclaimed", FailedCalls: 1, Reason: "retried below",
			Peers: []inbound.CallPeers{{Service: "inventory", Procedure: "reserve", Peers: []string{"10.0.0.7:8080", "10.0.0.9:8080"}}}}},
		storms: []inbound.Storm{
			{Time: now.Add(-2 * time.Second), Procedure: "checkout", Known: true, Failed: true, Served: 4, Blind: 7, Prevented: 3, Retries: 1, Radius: 1, BlindRadius: 2},
			{Time: now.Add(-3 * time.Second), Procedure: "browse", Known: false, Failed: false},
		},
		losses: inbound.Losses{
			Lost:      []inbound.Lost{{Reason: "budget", Requests: 170}, {Reason: "unclaimed", Requests: 300}, {Reason: "attempt-limit", Requests: 130}},
			Prevented: 374, StormRequests: 158,
		},
		instances: []retry.InstanceView{
			{Callee: "inventory", Peer: "10.0.0.7:8080", Failed: 233, Last: now.Add(-500 * time.Millisecond)},
			{Callee: "inventory", Peer: "10.0.0.8:8080", Failed: 2, Last: now.Add(-4 * time.Second)},
		},
	}
)

func serve(t *testing.T, src Source, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	h := &handler{src: src, service: "orders", now: func() time.Time { return now }}
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHTML(t *testing.T) {
	rec := serve(t, full, "/debug/errown", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	body := rec.Body.String()
	for _, want := range []string{
		"<title>errown · orders</title>",
		"<td>place</td><td>inventory::reserve</td>",
		`<span class="kind fail-close">fail-close</span>`,
		`<td class="num">95%</td><td class="num">40</td><td class="num">38</td><td>local</td>`,
		`<td>inventory</td>`, `<td class="num">110.0</td>`, `<td class="num">10s</td>`,
		`<td class="num">1.5s</td><td>place</td><td>unavailable</td>`,
		`<td class="unclaimed">unclaimed</td>`, "retried below",
		`<td colspan="5" class="peers">inventory::reserve attempts went to 10.0.0.7:8080, 10.0.0.9:8080</td>`,
		"<h2>Storms seen</h2>",
		// radius, blind radius, served, blind, prevented, retries
		`<td class="num">2s</td><td>checkout</td><td class="failed">failed</td>` + "\n" +
			`<td class="num">1</td><td class="num">2</td><td class="num">4</td><td class="num">7</td><td class="num">3</td><td class="num">1</td>`,
		`<td class="num">3s</td><td>browse</td><td class="succeeded">succeeded</td>` + "\n" +
			`<td colspan="6" class="unknown">unknown: a service below runs no errown, or its figures were lost</td>`,
		// what users lost, beside what was prevented
		`<tr><td>requests prevented below root requests (storm.prevented)</td><td class="num">374</td></tr>`,
		`<tr><td>root requests that met a storm (storm.requests)</td><td class="num">158</td></tr>`,
		`<tr><td class="failed">requests lost: failed after this service declined a retry, budget</td><td class="num">170</td></tr>`,
		`<tr><td class="failed">requests lost: failed after this service declined a retry, unclaimed</td><td class="num">300</td></tr>`,
		`<tr><td class="failed">requests lost: failed after this service declined a retry, attempt-limit</td><td class="num">130</td></tr>`,
		// the instances
		"<h2>Instances that failed calls another served</h2>",
		`<td class="num">500ms</td><td>inventory</td><td>10.0.0.7:8080</td><td class="num">233</td>`,
		`<td class="num">4s</td><td>inventory</td><td>10.0.0.8:8080</td><td class="num">2</td>`,
	} {
		assert.Contains(t, body, want)
	}
	assert.Less(t, strings.Index(body, "<td>checkout</td>"), strings.Index(body, "<td>browse</td>"), "newest first, as Storms gives them")
	assert.Less(t, strings.Index(body, "<h2>Storms seen</h2>"), strings.Index(body, `<table id="losses">`), "the losses in the storms section")
	assert.Less(t, strings.Index(body, `<table id="losses">`), strings.Index(body, `<table id="storms">`), "the losses above the storms")
	assert.Less(t, strings.Index(body, "10.0.0.7:8080</td>"), strings.Index(body, "10.0.0.8:8080</td>"), "newest first, as Instances gives them")
}

func TestHTMLEmpty(t *testing.T) {
	body := serve(t, fakeSource{budgets: []retry.BudgetView{{Callee: "naive", Disabled: true}}}, "/", nil).Body.String()
	assert.Contains(t, body, "No edge has failed yet.")
	assert.Contains(t, body, "no budget: every retry a policy wants is allowed")
	assert.Contains(t, body, "No request has failed yet.")
	assert.Contains(t, body, "No root request has met a storm yet.")
	assert.Contains(t, serve(t, fakeSource{}, "/", nil).Body.String(), "No retry policy is configured")

	none := serve(t, fakeSource{}, "/", nil).Body.String()
	assert.Contains(t, none, `<tr><td>requests lost: failed after this service declined a retry</td><td class="num">0</td></tr>`)
	assert.Contains(t, none, "No instance has failed a call another served")
	assert.Contains(t, none, `id="losses"`, "the losses shown, nothing lost")
}

func TestHTMLEscapes(t *testing.T) {
	src := fakeSource{
		decisions: []inbound.Decision{{Time: now, Procedure: "<script>alert(1)</script>", Claim: "claimed"}},
		storms:    []inbound.Storm{{Time: now, Procedure: "<script>alert(2)</script>"}},
	}
	src.decisions = append(src.decisions, inbound.Decision{Time: now, Procedure: "place", Claim: "unclaimed",
		Peers: []inbound.CallPeers{{Service: "inventory", Procedure: "reserve", Peers: []string{"<script>alert(3)</script>"}}}})
	body := serve(t, src, "/", nil).Body.String()
	assert.NotContains(t, body, "<script>alert(3)</script>")
	assert.Contains(t, body, "&lt;script&gt;alert(3)&lt;/script&gt;")
	assert.Equal(t, 1, strings.Count(body, `class="peers"`), "a row of peers for the decision that has them only")
	assert.NotContains(t, body, "<script>alert(1)</script>")
	assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.NotContains(t, body, "<script>alert(2)</script>")
	assert.Contains(t, body, "&lt;script&gt;alert(2)&lt;/script&gt;")
}

func TestJSON(t *testing.T) {
	for _, tt := range []struct {
		name   string
		target string
		header http.Header
	}{
		{"query", "/debug/errown?format=json", nil},
		{"accept", "/debug/errown", http.Header{"Accept": {"application/json"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, full, tt.target, tt.header)
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			var got Page
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
			assert.Equal(t, Page{Service: "orders", Time: now, Dependencies: full.deps, Budgets: budgetsOf(full.budgets), Decisions: full.decisions, Storms: full.storms,
				Losses: full.losses, Instances: full.instances}, got)
			assert.Contains(t, rec.Body.String(), `"reason": "unclaimed"`)
			assert.Contains(t, rec.Body.String(), `"peer": "10.0.0.7:8080"`)
			assert.Contains(t, rec.Body.String(), `"kind": "fail-close"`)
			assert.Contains(t, rec.Body.String(), `"blindRadius": 2`)
			assert.Contains(t, rec.Body.String(), `"peers": [`)
		})
	}
	rec := serve(t, fakeSource{}, "/?format=json", nil)
	assert.Contains(t, rec.Body.String(), `"dependencies": []`, "empty lists, not null")
	assert.Contains(t, rec.Body.String(), `"storms": []`, "empty lists, not null")
	assert.Contains(t, rec.Body.String(), `"instances": []`, "empty lists, not null")
	assert.Contains(t, rec.Body.String(), `"lost": []`, "empty lists, not null")
}

// TestJSONBudgets: a budget's window is a Go duration string, and a
// disabled budget says so and shows no ratio, floor, window or counts.
func TestJSONBudgets(t *testing.T) {
	src := fakeSource{budgets: []retry.BudgetView{
		{Callee: "inventory", Requests: 100, Retries: 3, Allowed: 110, Ratio: 0.1, MinPerSecond: 10, Window: 10 * time.Second},
		// A disabled budget's view still carries its configured numbers.
		{Callee: "naive", Disabled: true, Ratio: 0.1, MinPerSecond: 10, Window: 10 * time.Second},
	}}
	body := serve(t, src, "/?format=json", nil).Body.String()
	var got struct {
		Budgets []map[string]any `json:"budgets"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	assert.Equal(t, []map[string]any{
		{"callee": "inventory", "disabled": false, "requests": 100.0, "retries": 3.0, "succeeded": 0.0, "refused": 0.0, "allowed": 110.0, "ratio": 0.1, "minPerSecond": 10.0, "window": "10s"},
		{"callee": "naive", "disabled": true},
	}, got.Budgets)
	assert.Contains(t, body, `"window": "10s"`)
	assert.NotContains(t, body, "10000000000", "no duration in nanoseconds")
}

func TestBudgetJSONRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		give Budget
		want string
	}{
		{
			name: "enabled",
			give: Budget{Callee: "inventory", Requests: 100, Retries: 3, Allowed: 110, Ratio: 0.1, MinPerSecond: 10, Window: 1500 * time.Millisecond},
			want: `{"callee":"inventory","disabled":false,"requests":100,"retries":3,"succeeded":0,"refused":0,"allowed":110,"ratio":0.1,"minPerSecond":10,"window":"1.5s"}`,
		},
		{
			name: "enabled, empty window",
			give: Budget{Callee: "inventory", Ratio: 0.1},
			want: `{"callee":"inventory","disabled":false,"requests":0,"retries":0,"succeeded":0,"refused":0,"allowed":0,"ratio":0.1,"minPerSecond":0,"window":"0s"}`,
		},
		{
			name: "disabled",
			give: Budget{Callee: "naive", Disabled: true},
			want: `{"callee":"naive","disabled":true}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.give)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(b))
			var back Budget
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, tt.give, back)
		})
	}
}

func TestBudgetJSONBadWindow(t *testing.T) {
	var b Budget
	err := json.Unmarshal([]byte(`{"callee":"inventory","window":10000000000}`), &b)
	assert.Error(t, err, "a window in nanoseconds is not read as one")
	err = json.Unmarshal([]byte(`{"callee":"inventory","window":"forever"}`), &b)
	assert.ErrorContains(t, err, `budget "inventory": window: time: invalid duration "forever"`)
}

func TestMethodNotAllowed(t *testing.T) {
	h := Handler(full, "")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x")))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
}

// withModes returns src saying modes.
func withModes(src fakeSource, modes retry.Modes) fakeSource {
	src.modes = modes
	return src
}

// TestMode: the mode is the first line under the title, HTML and JSON.
func TestMode(t *testing.T) {
	tests := []struct {
		name     string
		give     Source
		wantHTML string
		wantJSON []string
	}{
		{
			name:     "enforce",
			give:     withModes(full, retry.Modes{Mode: retry.ModeEnforce, Overrides: []retry.ModeOverride{}}),
			wantHTML: `<p id="mode" class="mode enforce">Mode: <strong>enforce</strong>: errown suppresses the retries of unclaimed errors.</p>`,
			wantJSON: []string{`"mode": "enforce"`},
		},
		{
			name: "observe, one policy enforcing",
			give: withModes(full, retry.Modes{Mode: retry.ModeObserve, Overrides: []retry.ModeOverride{
				{Service: "inventory", Procedure: "reserve", Mode: retry.ModeEnforce},
				{Service: "pricing", Mode: retry.ModeEnforce},
			}}),
			wantHTML: `<p id="mode" class="mode observe">Mode: <strong>observe</strong>: errown retries as if it were not there and reports what enforce mode would prevent.` +
				` Policies in their own mode: inventory::reserve=enforce, pricing=enforce.</p>`,
			wantJSON: []string{`"mode": "observe"`, `"modeOverrides": [`, `"service": "inventory"`, `"procedure": "reserve"`, `"mode": "enforce"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := serve(t, tt.give, "/", nil).Body.String()
			assert.Contains(t, body, tt.wantHTML)
			assert.Less(t, strings.Index(body, "</h1>"), strings.Index(body, `<p id="mode"`), "under the title")
			assert.Less(t, strings.Index(body, `<p id="mode"`), strings.Index(body, "<h2>"), "above every section")

			js := serve(t, tt.give, "/?format=json", nil).Body.String()
			for _, want := range tt.wantJSON {
				assert.Contains(t, js, want)
			}
			assert.True(t, strings.HasPrefix(js, "{\n  \"mode\": "), "the first field: %s", js[:min(len(js), 40)])
		})
	}

	// A Status with no mode (none a Middleware gives): the page says nothing of it.
	assert.NotContains(t, serve(t, full, "/", nil).Body.String(), `id="mode"`)
	assert.NotContains(t, serve(t, full, "/?format=json", nil).Body.String(), `"mode"`)
}
