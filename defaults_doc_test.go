package errown

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultsAsDocumented checks every default a configuration field's
// doc states ("Default 10s.", "Default 1 MiB", `Default "errown-claim".`)
// against the value the field takes when left zero, and that every field
// that takes a value of its own when left zero says so in its doc: the
// defaults live in each section's DefaultConfig, and the docs are where
// users read them.
func TestDefaultsAsDocumented(t *testing.T) {
	// The configuration errown runs with when given nothing, one item in
	// each list so that a policy's fields get their defaults too.
	values := map[string]reflect.Value{}
	root := yamlDefaults().Interface().(Config)
	collectStructs(reflect.ValueOf(root), values)
	// The retry section as it runs: with the root's header names and mode.
	_, _, re := root.sections()
	collectStructs(reflect.ValueOf(re), values)

	checked := 0
	for _, dir := range []string{".", "inbound", "outbound", "ownership", "retry", "depmem"} {
		pkg := dir
		if dir == "." {
			pkg = "errown"
		}
		for typ, fields := range fieldDocs(t, dir) {
			v, ok := values[pkg+"."+typ]
			if !ok {
				// Not a configuration type errown applies defaults to:
				// none of its fields may state one but its zero value.
				for name, doc := range fields {
					stated, states, _ := statedDefault(doc)
					zero := stated == "false" || stated == "0" || stated == `""`
					assert.False(t, states && !zero, "%s.%s.%s states a default, but its type is not reached from the configurations", pkg, typ, name)
				}
				continue
			}
			for name, doc := range fields {
				f := v.FieldByName(name)
				where := pkg + "." + typ + "." + name
				require.True(t, f.IsValid(), where)
				stated, ok, word := statedDefault(doc)
				if ok && f.Kind() == reflect.String && !strings.HasPrefix(stated, `"`) {
					switch {
					case stated == "empty":
						stated = `""`
					case word:
						stated = strconv.Quote(stated) // enforce (the default)
					default:
						continue // prose: "Default as FailuresQuery over ..."
					}
				}
				if !ok {
					assert.False(t, isScalar(f) && !f.IsZero() && !_proseDefaults[where],
						"%s defaults to %v: its doc does not state it (\"Default X.\" or \"X (the default)\")", where, f.Interface())
					continue
				}
				checked++
				assert.True(t, sameValue(f, stated), "%s: its doc says %q, its default is %v", where, stated, f.Interface())
			}
		}
	}
	// Every default the docs state is checked: one more stated updates
	// this count, one fewer read is a doc the patterns no longer match.
	assert.Equal(t, 50, checked, "defaults read from the docs")
}

// collectStructs records v, and every struct it holds in a field or as a
// slice's first element, by its package's last element and type name.
func collectStructs(v reflect.Value, into map[string]reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		into[filepath.Base(v.Type().PkgPath())+"."+v.Type().Name()] = v
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				collectStructs(v.Field(i), into)
			}
		}
	case reflect.Slice:
		if v.Len() > 0 {
			collectStructs(v.Index(0), into)
		}
	}
}

// fieldDocs returns the doc comment of every named field of every struct
// type in the package in dir, by type and field name.
func fieldDocs(t *testing.T, dir string) map[string]map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	fset := token.NewFileSet()
	docs := map[string]map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			fields := map[string]string{}
			for _, field := range st.Fields.List {
				for _, name := range field.Names {
					fields[name.Name] = field.Doc.Text()
				}
			}
			docs[ts.Name.Name] = fields
			return true
		})
	}
	return docs
}

// _statedDefault finds "Default X" in a doc, X a quoted string or a word
// (a number, a duration, true or false) maybe followed by "MiB", or
// "X (the default)" and "X (default)".
var (
	_statedDefault = regexp.MustCompile(`Default ("[^"]*"|[0-9A-Za-z.]+(?: MiB)?)`)
	_theDefault    = regexp.MustCompile(`("[^"]*"|[0-9A-Za-z.-]+) \((?:the )?default\)`)
)

// _proseDefaults are the fields with a default of their own that their
// doc states in words no pattern reads.
var _proseDefaults = map[string]bool{
	"depmem.FleetConfig.FailuresQuery": true, // "Default: sum by those labels of increase(...)"
}

// statedDefault returns the default doc states, if any: "(also ..." and
// other prose after "Default" state none. word reports that it was read
// from "X (the default)", where an unquoted word stands for a string too
// ("enforce (the default)").
func statedDefault(doc string) (stated string, ok, word bool) {
	doc = strings.Join(strings.Fields(doc), " ")
	if m := _statedDefault.FindStringSubmatch(doc); m != nil {
		return strings.TrimSuffix(m[1], "."), true, false
	}
	if m := _theDefault.FindStringSubmatch(doc); m != nil {
		return strings.TrimSuffix(m[1], "."), true, true
	}
	return "", false, false
}

// isScalar reports whether f holds a number, a string, a bool or a
// duration: a value a doc can state.
func isScalar(f reflect.Value) bool {
	switch f.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64, reflect.String:
		return true
	}
	return false
}

// sameValue reports whether f holds the value s states.
func sameValue(f reflect.Value, s string) bool {
	if f.Type() == reflect.TypeFor[time.Duration]() {
		d, err := time.ParseDuration(s)
		return err == nil && time.Duration(f.Int()) == d
	}
	switch f.Kind() {
	case reflect.String:
		u, err := strconv.Unquote(s)
		return err == nil && f.String() == u
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		return err == nil && f.Bool() == b
	case reflect.Int, reflect.Int64:
		mult := int64(1)
		if n, ok := strings.CutSuffix(s, " MiB"); ok {
			s, mult = n, 1<<20
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return err == nil && f.Int() == n*mult
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		return err == nil && f.Float() == x
	}
	return false
}
