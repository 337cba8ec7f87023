// Command orders is the second of errown's three example services:
// orders::place calls inventory::reserve.
package main

import (
	_ "embed"

	"github.com/errown/errown/examples/internal/exampleapp"
)

//go:embed config.yaml
var defaultConfig []byte

func main() {
	exampleapp.Main(defaultConfig, exampleapp.Orders)
}
