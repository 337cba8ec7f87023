package depmem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/errown/errown/ownership"
	"github.com/uber-go/tally/v4"
	"go.uber.org/multierr"
	"go.uber.org/zap"
)

// Labels of an edge: the tags of depmem's per-edge counters, and the
// labels the fleet queries must return on each series.
const (
	LabelCallerProcedure = "caller_procedure"
	LabelCalleeService   = "callee_service"
	LabelCalleeProcedure = "callee_procedure"
)

// _maxFleetResponse caps the bytes read from one query response.
const _maxFleetResponse = 16 << 20

// FleetConfig configures the fleet-wide source: a Prometheus-compatible
// HTTP API (Prometheus, Thanos, M3 ...) holding every instance's
// depmem.callee_failures and depmem.joint_failures counters.
type FleetConfig struct {
	// URL of the API, e.g. http://prometheus:9090; empty turns the fleet
	// source off.
	URL string `yaml:"url,omitempty"`
	// Interval between queries. Default 30s.
	Interval time.Duration `yaml:"interval,omitempty"`
	// Timeout of one query. Default 5s.
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// Selector is a PromQL label matcher list put inside the default
	// queries' braces to pick this service's instances, e.g.
	// `service="checkout"`. Default empty.
	Selector string `yaml:"selector,omitempty"`
	// FailuresQuery returns callee failures per edge over the window, with
	// the labels caller_procedure, callee_service and callee_procedure.
	// Default: sum by those labels of
	// increase(errown_depmem_callee_failures{Selector}[Window]).
	FailuresQuery string `yaml:"failuresQuery,omitempty"`
	// JointQuery is the same for joint failures. Default as FailuresQuery
	// over errown_depmem_joint_failures.
	JointQuery string `yaml:"jointQuery,omitempty"`
}

func (c FleetConfig) withDefaults(window time.Duration) FleetConfig {
	if c.Interval == 0 {
		c.Interval = DefaultFleetInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultFleetTimeout
	}
	query := func(metric string) string {
		return fmt.Sprintf("sum by (%s, %s, %s) (increase(%s{%s}[%ds]))",
			LabelCallerProcedure, LabelCalleeService, LabelCalleeProcedure,
			metric, c.Selector, int64(math.Ceil(window.Seconds())))
	}
	if c.FailuresQuery == "" {
		c.FailuresQuery = query("errown_depmem_callee_failures")
	}
	if c.JointQuery == "" {
		c.JointQuery = query("errown_depmem_joint_failures")
	}
	return c
}

func (c FleetConfig) validate() error {
	var err error
	if c.URL != "" {
		u, perr := url.Parse(c.URL)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			err = multierr.Append(err, fmt.Errorf("fleet.url: must be an http(s) URL, got %q", redact(c.URL)))
		}
		// Edges are keyed by caller procedure, not caller service: the
		// default queries must be narrowed to this service's instances,
		// or other services' counts would decide this one's edges.
		if strings.TrimSpace(c.Selector) == "" && (c.FailuresQuery == "" || c.JointQuery == "") {
			err = multierr.Append(err, fmt.Errorf(`fleet.selector: required with fleet.url to pick this service's instances, e.g. service="checkout" (or give both queries)`))
		}
	}
	if c.Interval < 0 {
		err = multierr.Append(err, fmt.Errorf("fleet.interval: must be positive, got %v", c.Interval))
	}
	if c.Timeout < 0 {
		err = multierr.Append(err, fmt.Errorf("fleet.timeout: must be positive, got %v", c.Timeout))
	}
	return err
}

type counts struct {
	failures int64
	joint    int64
}

// fleet polls the fleet-wide counts. A nil *fleet is an empty source.
type fleet struct {
	cfg    FleetConfig
	client *http.Client
	logger *zap.Logger

	data    atomic.Pointer[map[ownership.Edge]counts]
	healthy atomic.Bool

	queries tally.Counter
	errors  tally.Counter
}

func newFleet(cfg FleetConfig, o options, queries, errors tally.Counter) *fleet {
	f := &fleet{
		cfg:     cfg,
		client:  o.client,
		logger:  o.logger,
		queries: queries,
		errors:  errors,
	}
	f.healthy.Store(true)
	return f
}

func (f *fleet) counts(e ownership.Edge) (counts, bool) {
	if f == nil {
		return counts{}, false
	}
	m := f.data.Load()
	if m == nil {
		return counts{}, false
	}
	c, ok := (*m)[e]
	return c, ok
}

func (f *fleet) edges() []ownership.Edge {
	if f == nil {
		return nil
	}
	m := f.data.Load()
	if m == nil {
		return nil
	}
	out := make([]ownership.Edge, 0, len(*m))
	for e := range *m {
		out = append(out, e)
	}
	return out
}

// refresh queries the fleet once. On failure the fleet's data is dropped,
// so classification falls back to local memory, and the first failure of an
// outage is logged.
func (f *fleet) refresh(ctx context.Context) {
	f.queries.Inc(1)
	data, err := f.fetch(ctx)
	if err != nil {
		f.errors.Inc(1)
		f.data.Store(nil)
		if f.healthy.Swap(false) {
			f.logger.Warn("errown: fleet memory unavailable, using local memory", zap.String("url", redact(f.cfg.URL)), zap.Error(err))
		}
		return
	}
	f.data.Store(&data)
	if !f.healthy.Swap(true) {
		f.logger.Info("errown: fleet memory available again", zap.String("url", redact(f.cfg.URL)))
	}
}

func (f *fleet) fetch(ctx context.Context) (map[ownership.Edge]counts, error) {
	failures, err := f.query(ctx, f.cfg.FailuresQuery)
	if err != nil {
		return nil, err
	}
	joint, err := f.query(ctx, f.cfg.JointQuery)
	if err != nil {
		return nil, err
	}
	out := make(map[ownership.Edge]counts, len(failures))
	for e, v := range failures {
		c := counts{failures: int64(math.Round(v))}
		c.joint = min(int64(math.Round(joint[e])), c.failures)
		if c.failures > 0 {
			out[e] = c
		}
	}
	return out, nil
}

func (f *fleet) query(ctx context.Context, q string) (map[ownership.Edge]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	u := strings.TrimRight(f.cfg.URL, "/") + "/api/v1/query?query=" + url.QueryEscape(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	res, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, _maxFleetResponse+1))
	if err != nil {
		return nil, fmt.Errorf("read fleet response: %w", err)
	}
	if len(b) > _maxFleetResponse {
		return nil, fmt.Errorf("fleet response over %d bytes", _maxFleetResponse)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fleet query answered %s", res.Status)
	}
	return ParseQueryResponse(b)
}

// ErrBadQueryResponse is wrapped by every error of ParseQueryResponse.
var ErrBadQueryResponse = errors.New("bad query response")

type queryResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  []json.RawMessage `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// ParseQueryResponse reads a Prometheus HTTP API instant-query response
// (a vector) into a value per edge, keyed by the labels caller_procedure,
// callee_service and callee_procedure. Series without callee_service are
// skipped; values that are not finite and non-negative are errors.
func ParseQueryResponse(b []byte) (map[ownership.Edge]float64, error) {
	var r queryResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQueryResponse, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%w: status %q: %s", ErrBadQueryResponse, r.Status, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("%w: result type %q, want vector", ErrBadQueryResponse, r.Data.ResultType)
	}
	out := make(map[ownership.Edge]float64, len(r.Data.Result))
	for i, s := range r.Data.Result {
		e := ownership.Edge{
			CallerProcedure: noneToEmpty(s.Metric[LabelCallerProcedure]),
			Service:         noneToEmpty(s.Metric[LabelCalleeService]),
			Procedure:       noneToEmpty(s.Metric[LabelCalleeProcedure]),
		}
		if e.Service == "" {
			continue
		}
		if len(s.Value) != 2 {
			return nil, fmt.Errorf("%w: result %d: value has %d elements, want 2", ErrBadQueryResponse, i, len(s.Value))
		}
		var text string
		if err := json.Unmarshal(s.Value[1], &text); err != nil {
			return nil, fmt.Errorf("%w: result %d: value: %v", ErrBadQueryResponse, i, err)
		}
		v, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("%w: result %d: value %q is not a non-negative number", ErrBadQueryResponse, i, text)
		}
		out[e] += v
	}
	return out, nil
}

// redact hides the password of a URL for logs and errors.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func noneToEmpty(s string) string {
	if s == "none" {
		return ""
	}
	return s
}

// FleetHealthy reports whether a fleet source is configured and whether
// its last query succeeded (true until the first one fails).
func (m *Memory) FleetHealthy() (configured, healthy bool) {
	if m.fleet == nil {
		return false, false
	}
	return true, m.fleet.healthy.Load()
}
