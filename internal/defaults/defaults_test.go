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

type budget struct {
	Floor   float64 `yaml:"floor,omitempty" zerounless:"noFloor"`
	NoFloor bool    `yaml:"noFloor,omitempty"`
}

type item struct {
	Name  string
	Tries int
}

type section struct {
	Root   string `yaml:"-"`
	Own    int    `yaml:"own,omitempty"`
	Budget budget `yaml:"budget,omitempty"`
	Items  []item `yaml:"items,omitempty"`
	Plain  []int  `yaml:"plain,omitempty"`
}

func TestFillZeroUnless(t *testing.T) {
	def := budget{Floor: 10}
	tests := []struct {
		give budget
		want budget
	}{
		{give: budget{}, want: budget{Floor: 10}},
		{give: budget{NoFloor: true}, want: budget{NoFloor: true}},
		{give: budget{Floor: 2, NoFloor: true}, want: budget{Floor: 2, NoFloor: true}},
		{give: budget{Floor: 2}, want: budget{Floor: 2}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Fill(tt.give, def), "%+v", tt.give)
	}
}

func TestFillItems(t *testing.T) {
	def := section{Root: "r", Own: 1, Budget: budget{Floor: 10}, Plain: []int{7}}
	items := []item{{Name: "a"}, {Name: "b", Tries: 3}}
	got := Fill(section{Items: items}, def, item{Tries: 2})
	assert.Equal(t, section{Root: "r", Own: 1, Budget: budget{Floor: 10}, Items: []item{{Name: "a", Tries: 2}, {Name: "b", Tries: 3}}, Plain: []int{7}}, got,
		"each item filled from the item default of its type")
	assert.Equal(t, []item{{Name: "a"}, {Name: "b", Tries: 3}}, items, "the list given is left as it was")
	assert.Equal(t, section{Root: "r", Own: 1, Budget: budget{Floor: 10}, Items: []item{{Name: "a"}}, Plain: []int{7}},
		Fill(section{Items: []item{{Name: "a"}}}, def), "no item default: items kept as given")
}

func TestSection(t *testing.T) {
	def := section{Root: "r", Own: 1, Budget: budget{Floor: 10}}
	assert.Equal(t, section{Own: 1, Budget: budget{Floor: 10}}, Section(section{}, def), "a field YAML does not read is not filled")
	assert.Equal(t, section{Root: "given", Own: 1, Budget: budget{Floor: 10}}, Section(section{Root: "given"}, def), "nor changed")
}
