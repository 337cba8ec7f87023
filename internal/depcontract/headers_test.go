package depcontract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoHeaderMapWrites: no source file of errown's (tests aside) writes
// into the maps a transport.Headers returns from Items or OriginalItems,
// which yarpc says must not be changed: headers change through With and
// Del only.
func TestNoHeaderMapWrites(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		found = append(found, headerMapWrites(fset, f)...)
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, found, "writes into transport.Headers' Items() or OriginalItems(): use Headers.With and Del on Headers of errown's own")
}

// TestHeaderMapWritesFound: the scan finds each kind of write, directly
// on the call and through a variable holding the map, and nothing in
// reads or in code that uses With and Del.
func TestHeaderMapWritesFound(t *testing.T) {
	tests := []struct {
		name string
		give string
		want int
	}{
		{"an index assigned", `h.Items()["k"] = "v"`, 1},
		{"through a variable", `items := h.Items(); items["k"] = "v"`, 1},
		{"two at once", `items, orig := h.Items(), h.OriginalItems(); items["k"], orig["K"] = "v", "v"`, 2},
		{"a variable assigned later", `var orig map[string]string; orig = h.OriginalItems(); orig["K"] += "v"`, 1},
		{"delete", `delete(h.OriginalItems(), "K")`, 1},
		{"delete through a variable", `items := h.Items(); for k := range items { delete(items, k) }`, 1},
		{"clear", `clear(h.Items())`, 1},
		{"in a closure", `items := h.Items(); f := func() { items["k"] = "v" }; f()`, 1},
		{"reads", `items := h.Items(); _ = items["k"]; for k, v := range h.OriginalItems() { _, _ = k, v }`, 0},
		{"With and Del", `_ = h.With("k", "v"); h.Del("k")`, 0},
		{"another map", `m := map[string]string{}; m["k"] = "v"; delete(m, "k")`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package p\n\nfunc f(h interface{ Items() map[string]string; OriginalItems() map[string]string; With(k, v string) interface{}; Del(string) }) {\n" + tt.give + "\n}\n"
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
			require.NoError(t, err)
			assert.Len(t, headerMapWrites(fset, f), tt.want)
		})
	}
}

// headerMapWrites returns the position of each write into a map returned
// by a call of Items or OriginalItems in f: an assignment to an index of
// it, delete or clear of it, on the call itself or on a variable of the
// same function assigned from one.
func headerMapWrites(fset *token.FileSet, f *ast.File) []string {
	var found []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		held := map[string]bool{} // variables assigned a header map
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
				for i, r := range as.Rhs {
					if id, ok := as.Lhs[i].(*ast.Ident); ok && isHeaderMapCall(r) {
						held[id.Name] = true
					}
				}
			}
			return true
		})
		isMap := func(e ast.Expr) bool {
			if id, ok := e.(*ast.Ident); ok {
				return held[id.Name]
			}
			return isHeaderMapCall(e)
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					if ix, ok := l.(*ast.IndexExpr); ok && isMap(ix.X) {
						found = append(found, fset.Position(l.Pos()).String())
					}
				}
			case *ast.IncDecStmt:
				if ix, ok := n.X.(*ast.IndexExpr); ok && isMap(ix.X) {
					found = append(found, fset.Position(n.Pos()).String())
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "clear") && len(n.Args) > 0 && isMap(n.Args[0]) {
					found = append(found, fset.Position(n.Pos()).String())
				}
			}
			return true
		})
	}
	return found
}

// isHeaderMapCall reports whether e calls a method Items or OriginalItems
// with no arguments.
func isHeaderMapCall(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok || len(c.Args) != 0 {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "Items" || sel.Sel.Name == "OriginalItems")
}
