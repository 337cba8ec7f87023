// Command housecount counts what the library's house rules bound: the
// exported identifiers of the public packages, the library's non-test
// lines, the statements that write an outbound call's state, the
// request path's longest functions, and the imports that run up from a
// lower layer of packages to a higher one (layer).
//
//	cd bench && go run ./cmd/housecount ..
//
// Run it from the bench module with the repository's root as its
// argument.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// _public are the packages users import.
var _public = []string{".", "inbound", "outbound", "retry", "retrypeer", "ownership", "depmem", "errowntest", "grpcgo", "nethttp", "debugpage"}

// _notLibrary are the folders of the repository that are not the library
// proper: the lab, the test IDL, the executable docs, examples, e2e and
// benchmarks.
var _notLibrary = []string{"internal/stormsim", "internal/testidl", "internal/docsnippets", "examples", "e2e", "bench", "cmd"}

// _requestPath are the packages an outbound call goes through.
var _requestPath = []string{"./internal/retrier", "./internal/egress", "./internal/reqlog", "./internal/calls", "./internal/ingress"}

func main() {
	state := flag.String("state", "internal/retrier.CallState,internal/retrier.Sends,internal/retrier.Sink,internal/reqlog.Result,internal/reqlog.CallState,internal/reqlog.Sends,internal/reqlog.Sink",
		"the types that hold a call's state, as package-path-suffix.Name, comma separated")
	longer := flag.Int("len", 80, "list the request path's functions longer than this")
	verbose := flag.Bool("v", false, "list every exported identifier and write site")
	flag.Parse()
	root := flag.Arg(0)
	if root == "" {
		root = "."
	}
	if err := run(os.Stdout, root, strings.Split(*state, ","), *longer, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "housecount:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, root string, state []string, longer int, verbose bool) error {
	total := 0
	fmt.Fprintln(w, "exported identifiers (types, functions, methods, constants, variables; no fields):")
	for _, dir := range _public {
		names, err := exported(filepath.Join(root, dir))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %-12s %d\n", dir, len(names))
		if verbose {
			fmt.Fprintf(w, "    %s\n", strings.Join(names, " "))
		}
		total += len(names)
	}
	fmt.Fprintf(w, "  total        %d\n", total)

	lines, err := libraryLines(root)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "library non-test lines (comments included): %d\n", lines)

	return requestPath(w, root, state, longer, verbose)
}

// exported lists the exported identifiers of the package in dir: its
// exported types, functions, constants and variables, and the exported
// methods of its exported types.
func exported(dir string) ([]string, error) {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedSyntax | packages.NeedFiles, Dir: dir}, ".")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Syntax {
			out = append(out, exportedIn(f)...)
		}
	}
	sort.Strings(out)
	return out, nil
}

func exportedIn(f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv != nil {
				recv := receiver(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				out = append(out, recv+"."+d.Name.Name)
				continue
			}
			out = append(out, d.Name.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						out = append(out, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// receiver returns the name of a method's receiver type.
func receiver(t ast.Expr) string {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// libraryLines counts the lines of the library's non-test Go files.
func libraryLines(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			for _, skip := range _notLibrary {
				if rel == skip {
					return filepath.SkipDir
				}
			}
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n += strings.Count(string(b), "\n")
		return nil
	})
	return n, err
}

// requestPath counts, over the request path's non-test files, the
// statements that write a call's state (an assignment or increment of a
// field of a state type, or a call of a pointer method on one, other than
// its locking and its reads), the functions longer than longer lines, and
// every package's imports of a public package from an internal one.
func requestPath(w io.Writer, root string, state []string, longer int, verbose bool) error {
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		Dir:  root,
	}, _requestPath...)
	if err != nil {
		return err
	}
	isState := func(t types.Type) bool {
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		n, ok := t.(*types.Named)
		if !ok || n.Obj().Pkg() == nil {
			return false
		}
		for _, s := range state {
			dot := strings.LastIndex(s, ".")
			if dot > 0 && strings.HasSuffix(n.Obj().Pkg().Path(), s[:dot]) && n.Obj().Name() == s[dot+1:] {
				return true
			}
		}
		return false
	}
	writes := map[string]int{}
	type fn struct {
		name string
		n    int
	}
	var long []fn
	for _, p := range pkgs {
		for _, f := range p.Syntax {
			file := p.Fset.Position(f.Pos()).Filename
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			short, _ := filepath.Rel(root, file)
			write := func(pos token.Pos, what string) {
				writes[p.PkgPath]++
				if verbose {
					fmt.Fprintf(w, "    write %s:%d %s\n", short, p.Fset.Position(pos).Line, what)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch s := n.(type) {
				case *ast.FuncDecl:
					if s.Body != nil {
						if l := p.Fset.Position(s.End()).Line - p.Fset.Position(s.Pos()).Line + 1; l > longer {
							long = append(long, fn{short + " " + s.Name.Name, l})
						}
					}
				case *ast.AssignStmt:
					for _, l := range s.Lhs {
						if fieldOfState(p.TypesInfo, l, isState) {
							write(s.Pos(), types.ExprString(l))
							break
						}
					}
				case *ast.IncDecStmt:
					if fieldOfState(p.TypesInfo, s.X, isState) {
						write(s.Pos(), types.ExprString(s.X))
					}
				case *ast.CallExpr:
					if mutatingCall(p.TypesInfo, s, isState) {
						write(s.Pos(), types.ExprString(s.Fun))
					}
				}
				return true
			})
		}
	}
	total := 0
	var byPkg []string
	for k, v := range writes {
		total += v
		byPkg = append(byPkg, fmt.Sprintf("%s %d", strings.TrimPrefix(k, "github.com/errown/errown/"), v))
	}
	sort.Strings(byPkg)
	fmt.Fprintf(w, "call state writes: %d in %d packages %v\n", total, len(writes), byPkg)
	sort.Slice(long, func(i, j int) bool { return long[i].n > long[j].n })
	fmt.Fprintf(w, "request path functions over %d lines: %d\n", longer, len(long))
	for _, f := range long {
		fmt.Fprintf(w, "  %4d %s\n", f.n, f.name)
	}
	return upward(w, root)
}

// fieldOfState reports whether e selects a field of a state value.
func fieldOfState(info *types.Info, e ast.Expr, isState func(types.Type) bool) bool {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.SelectorExpr:
			if sel, ok := info.Selections[x]; ok && sel.Kind() == types.FieldVal && isState(info.TypeOf(x.X)) {
				return true
			}
			e = x.X
		default:
			return false
		}
	}
}

// _reads are methods that lock, unlock or read a state: not writes.
var _reads = map[string]bool{
	"Lock": true, "Unlock": true, "Enter": true, "Leave": true, "Sent": true, "Sequential": true, "Ended": true,
	"Attempts": true, "Trivial": true, "Stormy": true, "Len": true, "Prevented": true, "Idle": true,
	"ErrownStopped": true, "Storm": true, "Call": true, "Transports": true, "Start": true, "Stop": true,
	"IsRunning": true, "WithState": true, "lock": true, "unlock": true, "idle": true,
}

// mutatingCall reports whether c calls a pointer method on a state value
// (or on a field of one) that is not one of _reads.
func mutatingCall(info *types.Info, c *ast.CallExpr, isState func(types.Type) bool) bool {
	se, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	sel, ok := info.Selections[se]
	if !ok || sel.Kind() != types.MethodVal || _reads[se.Sel.Name] {
		return false
	}
	sig := sel.Obj().Type().(*types.Signature)
	if _, ptr := sig.Recv().Type().(*types.Pointer); !ptr {
		return false
	}
	return isState(info.TypeOf(se.X)) && isState(sig.Recv().Type()) || fieldOfState(info, se.X, isState)
}

// layer ranks a package of the module: the vocabulary and configuration
// packages lowest, then the internal packages that implement them (and
// retrypeer, a peer chooser the root checks for), then the root that
// assembles them, then the adapters and tools built on the root.
func layer(path string) int {
	switch {
	case strings.HasPrefix(path, "internal/"), path == "retrypeer":
		return 1
	case path == "errown":
		return 2
	}
	switch path {
	case "ownership", "inbound", "outbound", "retry", "depmem":
		return 0
	}
	return 3
}

// upward lists the imports that run from a package to one of a higher
// layer (layer): a configuration package reaching into an
// implementation, an implementation into the root.
func upward(w io.Writer, root string) error {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports, Dir: root}, "./...")
	if err != nil {
		return err
	}
	const mod = "github.com/errown/errown"
	short := func(path string) string {
		if path == mod {
			return "errown"
		}
		return strings.TrimPrefix(path, mod+"/")
	}
	var edges []string
	for _, p := range pkgs {
		from := short(p.PkgPath)
		if strings.HasPrefix(from, "internal/testidl") {
			continue
		}
		for path := range p.Imports {
			if path != mod && !strings.HasPrefix(path, mod+"/") {
				continue
			}
			if to := short(path); layer(to) > layer(from) {
				edges = append(edges, from+" -> "+to)
			}
		}
	}
	sort.Strings(edges)
	fmt.Fprintf(w, "imports up a layer (configuration < internal, retrypeer < root < adapters): %d\n", len(edges))
	for _, e := range edges {
		fmt.Fprintf(w, "  %s\n", e)
	}
	return nil
}
