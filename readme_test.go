package errown_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocLinks checks the links of the README and the examples' README:
// every #anchor names a heading of the file it points into, and every
// relative path exists.
func TestDocLinks(t *testing.T) {
	for _, doc := range []string{"README.md", filepath.Join("examples", "README.md")} {
		t.Run(doc, func(t *testing.T) {
			b, err := os.ReadFile(doc)
			require.NoError(t, err)
			links := _link.FindAllStringSubmatch(withoutCode(string(b)), -1)
			require.NotEmpty(t, links)
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
