package errown_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocLinks checks the links of the README, the examples' and the
// benchmarks' READMEs and the docs/ pages: every #anchor names a heading
// of the file it points into, and every relative path exists.
func TestDocLinks(t *testing.T) {
	for _, doc := range docPages(t) {
		t.Run(doc, func(t *testing.T) {
			b, err := os.ReadFile(doc)
			require.NoError(t, err)
			links := _link.FindAllStringSubmatch(withoutCode(string(b)), -1)
			if doc == "README.md" {
				require.NotEmpty(t, links)
			}
			for _, l := range links {
				target := l[1]
				if strings.Contains(target, "://") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				file := doc
				if path != "" {
					file = filepath.Join(filepath.Dir(doc), path)
					_, err := os.Stat(file)
					assert.NoError(t, err, "link %q", target)
				}
				if anchor == "" || !strings.HasSuffix(file, ".md") {
					continue
				}
				assert.Contains(t, anchors(t, file), anchor, "link %q: no such heading in %s", target, file)
			}
		})
	}
}

// inWorkspace has cmd run in the repository's workspace (go.work), even
// when errown's module is tested alone (GOWORK=off): the documentation's
// Go blocks are in the examples' and internal/docsnippets' modules.
func inWorkspace(cmd *exec.Cmd) *exec.Cmd {
	wd, err := os.Getwd()
	if err == nil {
		cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(wd, "go.work"))
	}
	return cmd
}

// docPages returns the markdown pages whose links and Go blocks the
// tests check: the READMEs and every page of docs/.
func docPages(t *testing.T) []string {
	pages := []string{"README.md", filepath.Join("examples", "README.md"), filepath.Join("bench", "README.md")}
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, docs, "docs/ has pages")
	return append(pages, docs...)
}

// TestREADMELinksDocs: the README links every page of docs/, so that
// none is an orphan.
func TestREADMELinksDocs(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	linked := map[string]bool{}
	for _, l := range _link.FindAllStringSubmatch(withoutCode(string(b)), -1) {
		path, _, _ := strings.Cut(l[1], "#")
		linked[filepath.Clean(path)] = true
	}
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	for _, doc := range docs {
		if doc == filepath.Join("docs", "soak.md") {
			continue
		}
		assert.True(t, linked[doc], "the README links %s", doc)
	}
}

// TestREADMEShort: the README is read in minutes; the long sections
// live in docs/.
func TestREADMEShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	lines := strings.Count(string(b), "\n")
	assert.LessOrEqual(t, lines, 320, "README.md lines")
	assert.Contains(t, string(b), "\n## Quick start\n")
	assert.Contains(t, string(b), "](#quick-start)", "the table of contents")
}

// TestDocGoBlocks checks that every Go block of the README and the docs/
// pages compiles: each appears, line for line (indentation aside), in a
// file of the workspace that the build compiles, a whole program (the
// quick start is examples/quickstart/main.go) or a fragment in a function
// of internal/docsnippets (modules of their own, in go.work), and those
// packages build.
func TestDocGoBlocks(t *testing.T) {
	files := moduleGoFiles(t)
	pkgs := map[string]bool{}
	blocks := 0
	for _, doc := range docPages(t) {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for i, block := range goBlocks(string(b)) {
			blocks++
			file := fileHolding(files, block)
			if !assert.NotEmpty(t, file, "%s: Go block %d is in no Go file of the module that the build compiles:\n%s", doc, i+1, block) {
				continue
			}
			pkgs["./"+filepath.ToSlash(filepath.Dir(file))] = true
		}
	}
	require.NotZero(t, blocks, "Go blocks")
	args := []string{"build"}
	for p := range pkgs {
		args = append(args, p)
	}
	out, err := inWorkspace(exec.Command("go", args...)).CombinedOutput()
	assert.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
}

// moduleGoFiles returns the lines of each Go file of the workspace's
// modules that its package's build compiles: no test file, nothing under
// testdata, excluded by no build constraint.
func moduleGoFiles(t *testing.T) map[string][]string {
	out, err := inWorkspace(exec.Command("go", "list", "-f", `{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}`, "./...", "./examples/...", "./internal/docsnippets/...")).Output()
	require.NoError(t, err, "go list")
	wd, err := os.Getwd()
	require.NoError(t, err)
	files := map[string][]string{}
	for _, abs := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(wd, abs)
		require.NoError(t, err)
		b, err := os.ReadFile(abs)
		require.NoError(t, err)
		files[rel] = strings.Split(string(b), "\n")
	}
	return files
}

// fileHolding returns the file of files whose lines hold block's, each
// with its leading tabs and spaces trimmed, as a contiguous run; "" when
// none does.
func fileHolding(files map[string][]string, block string) string {
	want := trimmedLines(block)
	for name, lines := range files {
		got := make([]string, len(lines))
		for i, l := range lines {
			got[i] = strings.TrimLeft(l, " \t")
		}
	next:
		for start := 0; start+len(want) <= len(got); start++ {
			for j, w := range want {
				if got[start+j] != w {
					continue next
				}
			}
			return name
		}
	}
	return ""
}

func trimmedLines(block string) []string {
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, " \t")
	}
	return lines
}

// goBlocks returns the fenced Go blocks of markdown.
func goBlocks(markdown string) []string {
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(markdown, "\n") {
		switch {
		case cur == nil && line == "```go":
			cur = &strings.Builder{}
		case cur != nil && strings.HasPrefix(line, "```"):
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return blocks
}

func TestGoBlocks(t *testing.T) {
	assert.Equal(t, []string{"a\n\tb\n", "c\n"}, goBlocks("x\n```go\na\n\tb\n```\n```yaml\nd\n```\n```go\nc\n```\n"))
	files := map[string][]string{"x.go": {"package x", "", "func f() {", "\tg()", "\th()", "}"}}
	assert.Equal(t, "x.go", fileHolding(files, "g()\nh()\n"))
	assert.Equal(t, "", fileHolding(files, "h()\ng()\n"), "out of order")
	assert.Equal(t, "", fileHolding(files, "g()\ni()\n"), "a line no file has")
}

// _link matches a markdown link's target: ](target).
var _link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// withoutCode returns markdown without its fenced code blocks, where a
// "](" is code, not a link.
func withoutCode(markdown string) string {
	var out strings.Builder
	inCode := false
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}

// anchors returns the anchors GitHub gives the headings of a markdown
// file: lower case, punctuation dropped, spaces as hyphens, a repeated
// one numbered.
func anchors(t *testing.T, file string) []string {
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var out []string
	seen := map[string]int{}
	for _, line := range strings.Split(withoutCode(string(b)), "\n") {
		heading := strings.TrimLeft(line, "#")
		if heading == line || !strings.HasPrefix(heading, " ") {
			continue
		}
		a := slug(strings.TrimSpace(heading))
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{give: "Storm lab", want: "storm-lab"},
		{give: "Beyond yarpc: grpc-go and net/http services", want: "beyond-yarpc-grpc-go-and-nethttp-services"},
		{give: "Rollout: observe, then enforce", want: "rollout-observe-then-enforce"},
		{give: "Retry criteria satisfied (RCS)", want: "retry-criteria-satisfied-rcs"},
		{give: "Caller side: retry an error from the callee?", want: "caller-side-retry-an-error-from-the-callee"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, slug(tt.give))
	}
}
