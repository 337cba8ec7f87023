package errown

import (
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v2"
)

// ConfigFiles names the YAML files, in the order merged, of the
// config.Provider errown reads its configuration from: the files an
// application passes to config.NewYAML as config.File options, base first,
// overrides after. go.uber.org/config keeps no account of the files a
// provider merged, so errown sees only the merged configuration; an
// application that provides its files as well (fx.Supply(errown.ConfigFiles{...}))
// has errown's errors about a misspelled errown key name the files that
// hold it. Optional.
type ConfigFiles []string

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
