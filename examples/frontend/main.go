// Command frontend is the first of errown's three example services:
// frontend::checkout calls orders::place.
package main

import (
	_ "embed"

	"github.com/errown/errown/examples/internal/exampleapp"
)

//go:embed config.yaml
var defaultConfig []byte

func main() {
	exampleapp.Main(defaultConfig, exampleapp.Frontend)
}
