package errown

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"go.uber.org/multierr"
	"gopkg.in/yaml.v2"
)

// ConfigFiles names the YAML files, in the order merged, of the
// config.Provider errown reads its configuration from: the files an
// application passes to config.NewYAML as config.File options, base first,
// overrides after. go.uber.org/config keeps no account of the files a
// provider merged, so errown sees only the merged configuration; an
// application that provides its files as well (fx.Supply(errown.ConfigFiles{...}))
// has errown's errors about a misspelled errown key, or an unknown key or
// a value of the wrong type in an errown section, name the files that hold
// it. Optional.
type ConfigFiles []string

// annotate returns err, an error of ConfigFromYAML over the merged errown
// section, with each of its errors that the errown section of a file of
// f has too (an unknown key, a value of the wrong type) followed by
// " (in FILE)"; err itself when none is, or a file cannot be read.
func (f ConfigFiles) annotate(err error) error {
	inner := errors.Unwrap(err)
	if inner == nil {
		return err
	}
	in := map[string][]string{}
	def := yamlDefaults()
	for _, name := range f {
		b, rerr := os.ReadFile(name)
		if rerr != nil {
			return err
		}
		var top map[string]interface{}
		if yaml.Unmarshal(b, &top) != nil {
			return err
		}
		section, ok := top[_configKey]
		if !ok {
			continue
		}
		for _, e := range multierr.Errors(checkYAML("", section, reflect.TypeOf(Config{}), def)) {
			in[e.Error()] = append(in[e.Error()], name)
		}
	}
	if len(in) == 0 {
		return err
	}
	errs := multierr.Errors(inner)
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
		if names := in[e.Error()]; len(names) > 0 {
			out[i] = fmt.Errorf("%w (in %s)", e, strings.Join(names, ", "))
		}
	}
	return fmt.Errorf("errown: config: %w", multierr.Combine(out...))
}

// holding returns, for each of keys that a file of f holds at its top
// level, " (in FILE, FILE)" to put in an error; "" for the others.
func (f ConfigFiles) holding(keys []string) (map[string]string, error) {
	in := make(map[string][]string, len(keys))
	for _, name := range f {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("errown: config: ConfigFiles: %w", err)
		}
		var top map[string]interface{}
		if err := yaml.Unmarshal(b, &top); err != nil {
			return nil, fmt.Errorf("errown: config: ConfigFiles: %s: %w", name, err)
		}
		for _, k := range keys {
			if _, ok := top[k]; ok {
				in[k] = append(in[k], name)
			}
		}
	}
	out := make(map[string]string, len(in))
	for k, names := range in {
		out[k] = " (in " + strings.Join(names, ", ") + ")"
	}
	return out, nil
}
