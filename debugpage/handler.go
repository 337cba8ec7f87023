package debugpage

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/errown/errown"
	"github.com/errown/errown/depmem"
	"github.com/errown/errown/inbound"
	"github.com/errown/errown/retry"
)

// Source is what the page shows; *errown.Middleware is one.
type Source interface {
	Introspect() errown.Status
}

// Page is the page's content, as JSON renders it.
type Page struct {
	// Mode is enforce or observe, the mode errown runs in, and
	// ModeOverrides the retry policies whose own mode differs.
	Mode          retry.Mode           `json:"mode,omitempty"`
	ModeOverrides []retry.ModeOverride `json:"modeOverrides,omitempty"`
	Service       string               `json:"service,omitempty"`
	Time          time.Time            `json:"time"`
	Dependencies  []depmem.EdgeView    `json:"dependencies"`
	// Budgets are the callees' retry budgets (see Budget for their JSON).
	Budgets   []Budget           `json:"budgets"`
	Decisions []inbound.Decision `json:"decisions"`
	// Storms are the latest root requests that met a storm below, newest
	// first.
	Storms []inbound.Storm `json:"storms"`
	// Losses is what failed requests lost where this service declined a
	// retry, beside what errown prevented, since start.
	Losses inbound.Losses `json:"losses"`
	// Instances are the callees' instances that failed calls another
	// instance then served, newest first; empty when errown sees no
	// instance (no retrypeer chooser).
	Instances []retry.InstanceView `json:"instances"`
}

// Handler returns the debug page of src. service, if not empty, names the
// service in the title.
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
	st := h.src.Introspect()
	st.Losses.Lost = orEmpty(st.Losses.Lost)
	p := Page{
		Mode:          st.Modes.Mode,
		ModeOverrides: st.Modes.Overrides,
		Service:       h.service,
		Time:          h.now().UTC(),
		Dependencies:  orEmpty(st.Dependencies),
		Budgets:       budgetsOf(st.Budgets),
		Decisions:     orEmpty(st.Decisions),
		Storms:        orEmpty(st.Storms),
		Losses:        st.Losses,
		Instances:     orEmpty(st.Instances),
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
	_ = _page.Execute(w, p)
}

func wantsJSON(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return f == "json"
	}
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
