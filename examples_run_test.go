package errown_test

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExamplesRun: every example of every package in the module has an
// output comment, so go test runs it and checks what it prints; an
// example without one is only compiled, and what it shows may not work.
func TestExamplesRun(t *testing.T) {
	var examples int
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, ex := range doc.Examples(f) {
			examples++
			assert.True(t, ex.Output != "" || ex.EmptyOutput, "%s: Example%s has no // Output: comment, so go test never runs it", path, ex.Name)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, examples, 20, "the walk found the module's examples")
}
