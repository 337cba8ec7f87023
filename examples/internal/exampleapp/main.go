package exampleapp

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"go.uber.org/config"
	"go.uber.org/fx"
)

// Main runs an example service until it is interrupted. It reads the YAML
// file named by -config, or defaultConfig when there is none.
func Main(defaultConfig []byte, register Register) {
	path := flag.String("config", "", "YAML configuration file (default: the one built in)")
	flag.Parse()
	var (
		provider config.Provider
		err      error
	)
	if *path != "" {
		provider, err = FromFile(*path)
	} else {
		provider, err = config.NewYAML(config.Source(bytes.NewReader(defaultConfig)))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fx.New(Options(provider, register)).Run()
}
