package reqlog

import (
	"fmt"
	"math/bits"

	"github.com/errown/errown/internal/defaults"
	"go.uber.org/multierr"
)

const (
	// MaxShards is the largest shard count accepted. Each request starts
	// in a shard picked at random, so more shards than cores buy little,
	// and a request when nearly every shard is full looks through them in
	// turn.
	MaxShards = 1 << 10
)

// Config bounds the ingress logs: the requests errown tracks in flight
// (inbound.IngressConfig, the same fields, is its public form).
type Config struct {
	// Shards is the number of independently counted shards, a power of two
	// between 1 and 1024. Default 64. A Map uses at most MaxInFlight
	// shards (rounded down to a power of two).
	Shards int `yaml:"shards,omitempty"`
	// MaxInFlight bounds the logs held at once; requests past it are served
	// untracked. Default 100000.
	MaxInFlight int `yaml:"maxInFlight,omitempty"`
}

// DefaultConfig returns the configuration a zero Config means.
func DefaultConfig() Config {
	return Config{Shards: 64, MaxInFlight: 100000}
}

// WithDefaults returns c with every zero field set to DefaultConfig's:
// the configuration the map runs with.
func (c Config) WithDefaults() Config { return defaults.Fill(c, DefaultConfig()) }

// Validate reports every invalid field of c after defaults are applied.
// Each error names the yaml key relative to c, e.g. "shards"; a caller
// that nests Config under a key of its own adds that key in front.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var err error
	if c.Shards < 1 || c.Shards > MaxShards || bits.OnesCount(uint(c.Shards)) != 1 {
		err = multierr.Append(err, fmt.Errorf("shards: must be a power of two between 1 and %d, got %d", MaxShards, c.Shards))
	}
	if c.MaxInFlight < 1 {
		err = multierr.Append(err, fmt.Errorf("maxInFlight: must be positive, got %d", c.MaxInFlight))
	}
	return err
}
