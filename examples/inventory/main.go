// Command inventory is the last of errown's three example services:
// inventory::reserve calls nobody.
package main

import (
	_ "embed"

	"github.com/errown/errown/examples/internal/exampleapp"
)

//go:embed config.yaml
var defaultConfig []byte

func main() {
	exampleapp.Main(defaultConfig, exampleapp.Inventory)
}
