package depmem

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/errown/errown/internal/configkey"
	"go.uber.org/multierr"
)

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
	FailuresQuery string `yaml:"failuresQuery,omitempty" zeromeans:"the default query"`
	// JointQuery is the same for joint failures. Default as FailuresQuery
	// over errown_depmem_joint_failures.
	JointQuery string `yaml:"jointQuery,omitempty" zeromeans:"the default query"`
}

func (c FleetConfig) validate() error {
	var err error
	if c.URL != "" {
		u, perr := url.Parse(c.URL)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			err = multierr.Append(err, fmt.Errorf("fleet.url: must be an http(s) URL, got %q", configkey.RedactURL(c.URL)))
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
