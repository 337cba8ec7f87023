package debugpage

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
)

// Source is what the page shows; *errown.Middleware is one.
type Source interface {
	Dependencies() []depmem.EdgeView
	Budgets() []retry.BudgetView
	Decisions() []inbound.Decision
}

// StormSource is a Source that also reports the latest root storms;
// *errown.Middleware is one. The page lists them under "Storms seen" when
// its Source is a StormSource, and says it has none to show otherwise, so
// that a Source need not report storms.
type StormSource interface {
	Source
	Storms() []inbound.Storm
}

// ModeSource is a Source that also says the mode errown runs in;
// *errown.Middleware is one. The page names the mode at its top when its
// Source is a ModeSource.
type ModeSource interface {
	Source
	Modes() retry.Modes
}

// LossSource is a Source that also says what its failed requests lost
// where it declined a retry, beside what errown prevented below its root
// requests; *errown.Middleware is one. The page shows it beside the
// storms when its Source is a LossSource.
type LossSource interface {
	Source
	Losses() inbound.Losses
}

// InstanceSource is a Source that also lists the instances of its
// callees that failed calls another instance then served (a retrypeer
// chooser around the peer list lets errown see them); *errown.Middleware
// is one. The page lists them when its Source is an InstanceSource.
type InstanceSource interface {
	Source
	Instances() []retry.InstanceView
}

// Page is the page's content, as JSON renders it.
type Page struct {
	// Mode is enforce or observe, the mode errown runs in, and
	// ModeOverrides the retry policies whose own mode differs; both are
	// left out when the Source is no ModeSource.
	Mode          retry.Mode           `json:"mode,omitempty"`
	ModeOverrides []retry.ModeOverride `json:"modeOverrides,omitempty"`
	Service       string               `json:"service,omitempty"`
	Time          time.Time            `json:"time"`
	Dependencies  []depmem.EdgeView    `json:"dependencies"`
	// Budgets are the callees' retry budgets (see Budget for their JSON).
	Budgets   []Budget           `json:"budgets"`
	Decisions []inbound.Decision `json:"decisions"`
	// Storms are the latest root requests that met a storm below, newest
	// first; empty when the Source is no StormSource.
	Storms []inbound.Storm `json:"storms"`
	// Losses is what failed requests lost where this service declined a
	// retry, beside what errown prevented, since start; left out when the
	// Source is no LossSource.
	Losses *inbound.Losses `json:"losses,omitempty"`
	// Instances are the callees' instances that failed calls another
	// instance then served, newest first; empty when the Source is no
	// InstanceSource or sees no instance (no retrypeer chooser).
	Instances []retry.InstanceView `json:"instances"`
}

// Handler returns the debug page of src. service, if not empty, names the
// service in the title. When src is also a StormSource, the page lists its
// storms.
func Handler(src Source, service string) http.Handler {
	return &handler{src: src, service: service, now: time.Now}
}

type handler struct {
	src     Source
	service string
	now     func() time.Time
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := Page{
		Service:      h.service,
		Time:         h.now().UTC(),
		Dependencies: orEmpty(h.src.Dependencies()),
		Budgets:      budgetsOf(h.src.Budgets()),
		Decisions:    orEmpty(h.src.Decisions()),
		Storms:       []inbound.Storm{},
		Instances:    []retry.InstanceView{},
	}
	if ms, ok := h.src.(ModeSource); ok {
		modes := ms.Modes()
		p.Mode, p.ModeOverrides = modes.Mode, modes.Overrides
	}
	ss, reportsStorms := h.src.(StormSource)
	if reportsStorms {
		p.Storms = orEmpty(ss.Storms())
	}
	if ls, ok := h.src.(LossSource); ok {
		losses := ls.Losses()
		losses.Lost = orEmpty(losses.Lost)
		p.Losses = &losses
	}
	is, reportsInstances := h.src.(InstanceSource)
	if reportsInstances {
		p.Instances = orEmpty(is.Instances())
	}
	w.Header().Set("Cache-Control", "no-store")
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(p)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = _page.Execute(w, view{Page: p, ReportsStorms: reportsStorms, ReportsInstances: reportsInstances})
}

// view is what the HTML template renders: the Page, and whether its
// Source reports storms and instances at all.
type view struct {
	Page
	ReportsStorms    bool
	ReportsInstances bool
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func wantsJSON(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return f == "json"
	}
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}
