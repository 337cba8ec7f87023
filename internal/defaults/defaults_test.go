package defaults

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"time"
)

// The root package's TestDefaultsAsDocumented checks each default
// against the value its Config field's doc states.

type inner struct {
	Window time.Duration
	Off    bool
}

type filled struct {
	N      int
	Ratio  float64
	Name   string
	Codes  []string
	Inner  inner
	Set    *bool
	hidden int
}

func TestFill(t *testing.T) {
	def := filled{N: 7, Ratio: 0.5, Name: "x", Codes: []string{"a"}, Inner: inner{Window: time.Second, Off: true}, Set: new(true), hidden: 9}
	assert.Equal(t, filled{N: 7, Ratio: 0.5, Name: "x", Codes: []string{"a"}, Inner: inner{Window: time.Second, Off: true}, Set: def.Set},
		Fill(filled{}, def), "every zero field takes the default, unexported ones left alone")
	give := filled{N: 3, Ratio: 0.1, Name: "y", Codes: []string{}, Inner: inner{Window: time.Minute}, Set: new(false)}
	got := Fill(give, def)
	assert.Equal(t, filled{N: 3, Ratio: 0.1, Name: "y", Codes: []string{"a"}, Inner: inner{Window: time.Minute, Off: true}, Set: give.Set}, got,
		"set fields kept, an empty list takes the default")
}
