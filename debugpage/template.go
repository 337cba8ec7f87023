package debugpage

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

var _page = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct":             func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
	"num":             func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"ago":             func(now, t time.Time) string { return now.Sub(t).Round(time.Millisecond).String() },
	"join":            func(s []string) string { return strings.Join(s, ", ") },
	"heldBackWorking": heldBackWorking,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>errown{{with .Service}} · {{.}}{{end}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #1d1d1f; background: #fafafa; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.8em; }
p.note { color: #666; margin-top: 0; }
table { border-collapse: collapse; background: #fff; box-shadow: 0 1px 2px #0002; }
th, td { padding: 0.35em 0.9em; text-align: left; border-bottom: 1px solid #eee; }
th { background: #f0f0f3; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.kind { padding: 0.1em 0.5em; border-radius: 0.8em; font-size: 0.9em; }
.fail-close { background: #fde2e1; color: #a1120b; }
.fail-open { background: #dff5e3; color: #176b2c; }
.unknown { background: #eee; color: #555; }
.claimed { color: #a1120b; font-weight: 600; }
.unclaimed { color: #555; font-weight: 600; }
.empty { color: #888; font-style: italic; }
p.mode { font-size: 1.05em; }
p.mode.observe strong { color: #8a5a00; }
p.mode.enforce strong { color: #176b2c; }
.failed { color: #a1120b; }
.succeeded { color: #176b2c; }
td.unknown { font-style: italic; }
td.held-back { color: #8a5a00; }
td.peers { color: #555; font-size: 0.9em; }
</style>
</head>
<body>
<h1>errown{{with .Service}} · {{.}}{{end}}</h1>
{{with .Mode}}<p id="mode" class="mode {{.}}">Mode: <strong>{{.}}</strong>: {{if eq . "observe"}}errown retries as if it were not there and reports what enforce mode would prevent{{else}}errown suppresses the retries of unclaimed errors{{end}}.
{{- with $.ModeOverrides}} Policies in their own mode: {{range $i, $o := .}}{{if $i}}, {{end}}{{$o}}{{end}}.{{end}}</p>
{{end}}<p class="note">As of {{.Time.Format "2006-01-02 15:04:05 MST"}}. <a href="?format=json">JSON</a></p>

<h2>Dependencies</h2>
<p class="note">What the dependency memory knows of each edge: P(caller fails | callee fails) over the window.</p>
{{if .Dependencies}}
<table id="dependencies">
<tr><th>caller procedure</th><th>callee</th><th>kind</th><th>ratio</th><th>callee failures</th><th>joint failures</th><th>source</th></tr>
{{range .Dependencies}}<tr>
<td>{{.Edge.CallerProcedure}}</td><td>{{.Edge.Service}}::{{.Edge.Procedure}}</td>
<td><span class="kind {{.Kind}}">{{.Kind}}</span></td>
<td class="num">{{pct .Ratio}}</td><td class="num">{{.CalleeFailures}}</td><td class="num">{{.JointFailures}}</td><td>{{.Source}}</td>
</tr>
{{end}}</table>
{{else}}<p class="empty">No edge has failed yet.</p>{{end}}

<h2>Retry budgets</h2>
{{if .Budgets}}
<table id="budgets">
<tr><th>callee</th><th>requests</th><th>retries failed</th><th>retries succeeded</th><th>refused</th><th>allowed</th><th>ratio</th><th>floor /s</th><th>window</th></tr>
{{range .Budgets}}<tr>
<td>{{.Callee}}</td>
{{if .Disabled}}<td colspan="8" class="empty">no budget: every retry a policy wants is allowed</td>{{else}}
<td class="num">{{.Requests}}</td><td class="num">{{.Retries}}</td><td class="num">{{.Succeeded}}</td><td class="num">{{.Refused}}</td><td class="num">{{num .Allowed}}</td>
<td class="num">{{pct .Ratio}}</td><td class="num">{{num .MinPerSecond}}</td><td class="num">{{.Window}}</td>{{end}}
</tr>
{{if heldBackWorking .}}<tr><td></td><td colspan="8" class="held-back">held back {{.Refused}} retries that were working: {{.Succeeded}} of the window's retries to {{.Callee}} succeeded, {{.Retries}} failed (the failures are independent: consider a larger ratio)</td></tr>
{{end}}{{if .StarvedByHedges}}<tr><td></td><td colspan="8" class="held-back">hedges took what retries of failures needed: {{.StarvedByHedges}} retries of failures to {{.Callee}} refused that the window had room for but for the hedges' {{.Hedges}} withdrawals (hedges may take half of the budget: consider a larger ratio)</td></tr>
{{end}}{{end}}</table>
{{else}}<p class="empty">No retry policy is configured: errown never retries.</p>{{end}}

<h2>Instances that failed calls another served</h2>
<p class="note">Instances (peers) of a callee whose attempt failed a call that another instance of the callee then served, or answered later than a hedge that did: a partial failure, one bad instance. Seen through a retrypeer chooser around the callee's peer list; at most 16 per callee, the most recent first.</p>
{{if .Instances}}
<table id="instances">
<tr><th>ago</th><th>callee</th><th>instance</th><th>calls another served</th></tr>
{{$now := .Time}}{{range .Instances}}<tr>
<td class="num">{{ago $now .Last}}</td><td>{{.Callee}}</td><td>{{.Peer}}</td><td class="num">{{.Failed}}</td>
</tr>
{{end}}</table>
{{else}}<p class="empty">No instance has failed a call another served (or no callee's peer list is wrapped in retrypeer.New).</p>{{end}}

<h2>Recent claim decisions</h2>
{{if .Decisions}}
<table id="decisions">
<tr><th>ago</th><th>procedure</th><th>code</th><th>claim</th><th>failed calls</th><th>why</th></tr>
{{$now := .Time}}{{range .Decisions}}<tr>
<td class="num">{{ago $now .Time}}</td><td>{{.Procedure}}</td><td>{{.Code}}</td>
<td class="{{.Claim}}">{{.Claim}}</td><td class="num">{{.FailedCalls}}</td><td>{{.Reason}}</td>
</tr>
{{range .Peers}}<tr><td></td><td colspan="5" class="peers">{{.Service}}::{{.Procedure}} attempts went to {{join .Peers}}</td></tr>
{{end}}{{end}}</table>
{{else}}<p class="empty">No request has failed yet.</p>{{end}}

<h2>Storms seen</h2>
<p class="note">Root requests (their caller runs no errown) that met a storm below: a retry spent or suppressed, or figures unknown.
Radius: the most hops on one call path that spent a retry. Served: requests the subtree served, retries included.
Blind: the same had every hop retried per its own policy, blind to claims. Prevented = blind &minus; served.
In observe mode errown retries blind: the blind figures are what happened, the others what enforce mode would do.</p>
{{with .Losses}}<table id="losses">
<tr><th colspan="2">since start</th></tr>
<tr><td>requests prevented below root requests (storm.prevented)</td><td class="num">{{.Prevented}}</td></tr>
<tr><td>root requests that met a storm (storm.requests)</td><td class="num">{{.StormRequests}}</td></tr>
{{range .Lost}}<tr><td class="failed">requests lost: failed after this service declined a retry, {{.Reason}}</td><td class="num">{{.Requests}}</td></tr>
{{else}}<tr><td>requests lost: failed after this service declined a retry</td><td class="num">0</td></tr>
{{end}}</table>
<p class="note">Lost (inbound.failed_after_denied): a refusal (budget, deadline, pushback, overload, ...), unclaimed (errown suppressed a retry the policy would have sent) or attempt-limit (the policy's last attempt failed); a request counts once per reason. Each service counts what it declined: the service users call says what they lost.</p>
{{end}}{{if .Storms}}
<table id="storms">
<tr><th>ago</th><th>procedure</th><th>root</th><th>radius</th><th>blind radius</th><th>served</th><th>blind</th><th>prevented</th><th>retries</th></tr>
{{$now := .Time}}{{range .Storms}}<tr>
<td class="num">{{ago $now .Time}}</td><td>{{.Procedure}}</td>{{if .Failed}}<td class="failed">failed</td>{{else}}<td class="succeeded">succeeded</td>{{end}}
{{if .Known}}<td class="num">{{.Radius}}</td><td class="num">{{.BlindRadius}}</td><td class="num">{{.Served}}</td><td class="num">{{.Blind}}</td><td class="num">{{.Prevented}}</td><td class="num">{{.Retries}}</td>{{else}}<td colspan="6" class="unknown">unknown: a service below runs no errown, or its figures were lost</td>{{end}}
</tr>
{{end}}</table>
{{else}}<p class="empty">No root request has met a storm yet.</p>{{end}}
</body>
</html>
`))
