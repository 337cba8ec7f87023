package errown

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/errown/errown/inbound"
	"github.com/errown/errown/internal/defaults"
	"github.com/errown/errown/internal/wire"
	"github.com/errown/errown/retry"
)

// A value written in YAML is taken as written or rejected, never silently
// replaced. Config reads a zero field as its documented default (zap's
// rule, and what a Go literal such as Config{} needs), so in YAML a key
// written out with the zero of its type (0, 0s, "", []) where that zero
// would mean a default is an error that says what it would have meant and
// how to write what was meant. Where the zero means what it says (an
// attemptTimeout of 0 is no per-attempt limit, a snapshot path of "" is
// no snapshot), it is taken as written. A key given no value at all
// ("ratio:" or "ratio: ~") is a key left out.

// zeroRule is the reading of a field whose zero means a default.
type zeroRule struct {
	// means is what the zero would read as, e.g. "the default 10".
	means string
	// fix says how to write what an explicit zero asks for; empty: write
	// the value meant, or leave the key out for the default.
	fix string
	// unless names a sibling key that, set to true, makes the zero mean
	// what it says: "minPerSecond: 0" beside "noFloor: true".
	unless string
}

// _zeroRules are the fields whose zero means a default, by key path below
// the errown key, "[]" standing for any list index. Every field of Config
// is either here or, in zeros_test.go, among those whose zero is literal.
var _zeroRules = map[string]zeroRule{
	"claimHeader":       {means: fmt.Sprintf("the default %q", defaults.ClaimHeader)},
	"attemptHeader":     {means: fmt.Sprintf("the default %q", defaults.AttemptHeader)},
	"noRetryHeader":     {means: fmt.Sprintf("the default %q", defaults.NoRetryHeader)},
	"codeHeader":        {means: fmt.Sprintf("the default %q", defaults.CodeHeader)},
	"stormHeader":       {means: fmt.Sprintf("the default %q", defaults.StormHeader)},
	"mode":              {means: fmt.Sprintf("the default %s", retry.ModeEnforce)},
	"wiring":            {means: fmt.Sprintf("the default %s", WiringRequire)},
	"unknownEdges":      {means: fmt.Sprintf("the default %s", inbound.UnknownCorrelated)},
	"maxRootProcedures": {means: fmt.Sprintf("the default %d", defaults.MaxRootProcedures)},
	"incidentWindow":    {means: fmt.Sprintf("the default %v", defaults.IncidentWindow)},

	"admission.mode":     {means: fmt.Sprintf("the default %s", inbound.AdmissionDisabled)},
	"admission.maxQueue": {means: fmt.Sprintf("the default %d", defaults.AdmissionMaxQueue)},
	"admission.minLimit": {means: fmt.Sprintf("the default %d", defaults.AdmissionMinLimit)},
	"admission.maxLimit": {means: fmt.Sprintf("the default %d", defaults.AdmissionMaxLimit)},

	"ingress.shards":      {means: fmt.Sprintf("the default %d", defaults.IngressShards)},
	"ingress.maxInFlight": {means: fmt.Sprintf("the default %d", defaults.IngressMaxInFlight)},

	"retry.maxBodyBytes": {means: fmt.Sprintf("the default %d (1 MiB)", defaults.MaxBodyBytes)},
	"retry.budget.ratio": {
		means: fmt.Sprintf("the default %v", defaults.BudgetRatio),
		fix:   "for a budget that is nearly all floor write a tiny ratio such as 0.0001",
	},
	"retry.budget.minPerSecond": {
		means:  fmt.Sprintf("the default %v", defaults.BudgetMinPerSecond),
		fix:    "to disable the floor write noFloor: true",
		unless: "noFloor",
	},
	"retry.budget.window": {means: "the default " + shortDuration(defaults.BudgetWindow)},
	"retry.overload.maxInFlight": {
		means: fmt.Sprintf("the default %d", defaults.OverloadMaxInFlight),
		fix:   "to hold no attempt back write disabled: true",
	},
	"retry.overload.minInFlight": {means: fmt.Sprintf("the default %d", defaults.OverloadMinInFlight)},
	"retry.overload.threshold":   {means: fmt.Sprintf("the default %v", defaults.OverloadThreshold)},
	"retry.policies[].maxAttempts": {
		means: fmt.Sprintf("the default %d", defaults.MaxAttempts),
		fix:   "for no retries write maxAttempts: 1",
	},
	"retry.policies[].retryableCodes": {
		means: "the default " + defaultCodes(),
		fix:   "for no retries write maxAttempts: 1",
	},
	"retry.policies[].initialBackoff": {
		means: "the default " + shortDuration(defaults.InitialBackoff),
		fix:   "for practically no backoff write 1ns",
	},
	"retry.policies[].maxBackoff": {means: "the default " + shortDuration(defaults.MaxBackoff)},
	"retry.policies[].minRemaining": {
		means: "the default " + shortDuration(defaults.MinRemaining),
		fix:   "for practically no margin write 1ns",
	},

	"memory.window":         {means: "the default " + shortDuration(defaults.MemoryWindow)},
	"memory.buckets":        {means: fmt.Sprintf("the default %d", defaults.MemoryBuckets)},
	"memory.minSamples":     {means: fmt.Sprintf("the default %d", defaults.MinSamples)},
	"memory.closeThreshold": {means: fmt.Sprintf("the default %v", defaults.CloseThreshold)},
	"memory.openThreshold": {
		means: fmt.Sprintf("the default %v", defaults.OpenThreshold),
		fix:   "for fail-open only when the caller never failed with the callee write a tiny threshold such as 1e-9",
	},
	"memory.hysteresis": {
		means:  fmt.Sprintf("the default %v", defaults.Hysteresis),
		fix:    "for none write noHysteresis: true",
		unless: "noHysteresis",
	},
	"memory.maxEdges":            {means: fmt.Sprintf("the default %d", defaults.MaxEdges)},
	"memory.snapshot.interval":   {means: "the default " + shortDuration(defaults.SnapshotInterval)},
	"memory.fleet.interval":      {means: "the default " + shortDuration(defaults.FleetInterval)},
	"memory.fleet.timeout":       {means: "the default " + shortDuration(defaults.FleetTimeout)},
	"memory.fleet.failuresQuery": {means: "the default query"},
	"memory.fleet.jointQuery":    {means: "the default query"},
}

// explicitZeros reports, by key path, every key of the errown section v
// (decoded generically) written with a zero that would mean a default.
// Values of the wrong type are checkYAML's to report.
func explicitZeros(v interface{}) error {
	return zerosIn("", "", v, reflect.TypeOf(Config{}))
}

func zerosIn(path, pattern string, v interface{}, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[interface{}]interface{})
		if !ok {
			return nil
		}
		return eachKey(m, t, func(k string, f reflect.StructField, known bool, value interface{}) error {
			if !known {
				return nil // checkYAML's to report
			}
			rule, ruled := _zeroRules[join(pattern, k)]
			if ruled && isZero(value, f.Type) && lookup(m, rule.unless) != true {
				return rule.error(join(path, k), value)
			}
			return zerosIn(join(path, k), join(pattern, k), value, f.Type)
		})
	case reflect.Slice:
		s, ok := v.([]interface{})
		if !ok {
			return nil
		}
		return eachElem(s, func(i int, e interface{}) error {
			return zerosIn(fmt.Sprintf("%s[%d]", path, i), pattern+"[]", e, t.Elem())
		})
	}
	return nil
}

func (r zeroRule) error(path string, written interface{}) error {
	fix := r.fix
	fix = cmp.Or(fix, "write the value you mean, or leave the key out for the default")
	return fmt.Errorf("%s: %s would mean %s; %s", path, showZero(written), r.means, fix)
}

// isZero reports whether v, decoded from YAML, is the zero of type t. A
// YAML null is not: it is a key given no value, read as left out.
func isZero(v interface{}, t reflect.Type) bool {
	if v == nil {
		return false
	}
	if t == _durationType {
		if s, ok := v.(string); ok {
			d, err := time.ParseDuration(s)
			return err == nil && d == 0
		}
		return v == 0
	}
	switch t.Kind() {
	case reflect.String:
		return v == ""
	case reflect.Slice:
		s, ok := v.([]interface{})
		return ok && len(s) == 0
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64, reflect.Float32:
		switch n := v.(type) {
		case int:
			return n == 0
		case int64:
			return n == 0
		case uint64:
			return n == 0
		case float64:
			return n == 0 // -0 too
		}
	}
	return false
}

// showZero is how a zero was written, for an error message.
func showZero(v interface{}) string {
	switch z := v.(type) {
	case string:
		if z == "" {
			return `""`
		}
		return z // a duration such as 0s
	case []interface{}:
		return "[]"
	default:
		return fmt.Sprint(v)
	}
}

// shortDuration writes d as a person does: 10m rather than 10m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// defaultCodes lists the codes retried by default, as YAML writes them.
func defaultCodes() string {
	codes := wire.DefaultRetryableCodes()
	names := make([]string, len(codes))
	for i, c := range codes {
		names[i] = c.String()
	}
	return "[" + strings.Join(names, ", ") + "]"
}
