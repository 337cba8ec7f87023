package main

import (
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExportedIn(t *testing.T) {
	const src = `package p

type T struct{ Field int }
type hidden struct{}
type G[K any] struct{}

func (T) Method()        {}
func (*T) Pointer()      {}
func (hidden) Exported() {}
func (G[K]) Generic()    {}
func (T) unexported()    {}
func F()                 {}
func f()                 {}

const (
	A = iota
	b
)

var V, w = 1, 2
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"T", "G", "T.Method", "T.Pointer", "G.Generic", "F", "A", "V"}, exportedIn(f))
}

func TestLayer(t *testing.T) {
	tests := []struct {
		give string
		want int
	}{
		{"ownership", 0},
		{"retry", 0},
		{"internal/retrier", 1},
		{"retrypeer", 1},
		{"errown", 2},
		{"grpcgo", 3},
		{"errowntest", 3},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, layer(tt.give), tt.give)
	}
}
