package memory

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

	"github.com/errown/errown/depmem"
	"github.com/errown/errown/internal/configkey"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/ownership"
	"github.com/uber-go/tally/v4"
	"go.uber.org/zap"
)

// _maxFleetResponse caps the bytes read from one query response.
const _maxFleetResponse = 16 << 20

type counts struct {
	failures int64
	joint    int64
}

// fleet polls the fleet-wide counts. A nil *fleet is an empty source.
type fleet struct {
	cfg    depmem.FleetConfig
	client *http.Client
	logger *zap.Logger

	data    atomic.Pointer[map[ownership.Edge]counts]
	healthy atomic.Bool

	queries tally.Counter
	errors  tally.Counter
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

// ParseQueryResponse reads a Prometheus instant-query vector response into
// a value per edge (labels caller_procedure, callee_service,
// callee_procedure). Series without callee_service are skipped; values
// not finite and non-negative are errors.
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
			CallerProcedure: noneToEmpty(s.Metric[defaults.LabelCallerProcedure]),
			Service:         noneToEmpty(s.Metric[defaults.LabelCalleeService]),
			Procedure:       noneToEmpty(s.Metric[defaults.LabelCalleeProcedure]),
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

// FleetHealthy reports whether a fleet source is configured and whether
// its last query succeeded (true until the first one fails).
func (m *Memory) FleetHealthy() (configured, healthy bool) {
	if m.fleet == nil {
		return false, false
	}
	return true, m.fleet.healthy.Load()
}

func newFleet(cfg depmem.FleetConfig, o options, queries, errors tally.Counter) *fleet {
	f := &fleet{
		cfg:     cfg,
		client:  o.client,
		logger:  o.Logger,
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

// refresh queries the fleet once. On failure the fleet's data is dropped
// (classification falls back to local), and an outage's first failure is
// logged.
func (f *fleet) refresh(ctx context.Context) {
	f.queries.Inc(1)
	data, err := f.fetch(ctx)
	if err != nil {
		f.errors.Inc(1)
		f.data.Store(nil)
		if f.healthy.Swap(false) {
			f.logger.Warn("errown: fleet memory unavailable, using local memory", zap.String("url", configkey.RedactURL(f.cfg.URL)), zap.Error(err))
		}
		return
	}
	f.data.Store(&data)
	if !f.healthy.Swap(true) {
		f.logger.Info("errown: fleet memory available again", zap.String("url", configkey.RedactURL(f.cfg.URL)))
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

func noneToEmpty(s string) string {
	if s == "none" {
		return ""
	}
	return s
}
