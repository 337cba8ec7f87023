package stormsim

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"
)

// _topologies are the topologies the scenarios run, shipped with the
// binary so that they work from any directory.
//
//go:embed topologies/*.yaml
var _topologies embed.FS

// TopologyNames returns the names of the shipped topologies, sorted.
func TopologyNames() []string {
	entries, _ := _topologies.ReadDir("topologies") // embedded: cannot fail
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// TopologyYAML returns the YAML of the shipped topology name.
func TopologyYAML(name string) ([]byte, error) {
	b, err := _topologies.ReadFile(path.Join("topologies", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("topology: no shipped topology %q (have %s)", name, strings.Join(TopologyNames(), ", "))
	}
	return b, nil
}

// LoadTopology returns the shipped topology name, parsed and validated.
func LoadTopology(name string) (*Topology, error) {
	b, err := TopologyYAML(name)
	if err != nil {
		return nil, err
	}
	return ParseTopology(b)
}

// mustTopology returns the shipped topology name; the tests parse every
// one, so a failure is a bug in the shipped files.
func mustTopology(name string) *Topology {
	t, err := LoadTopology(name)
	if err != nil {
		panic(err)
	}
	return t
}
