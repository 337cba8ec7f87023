package errown_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGoDirectiveIsTheLowestNeeded holds go.mod's go directive to the
// highest go directive among the modules errown's packages build from: a
// library asks for the Go its dependencies need, not the newest. The
// module is read alone (GOWORK=off): the workspace's other modules (the
// lab, the examples, the tests with Prometheus and the OpenTelemetry SDK)
// do not set errown's floor.
func TestGoDirectiveIsTheLowestNeeded(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	require.NotNil(t, m, "go.mod has no go directive")
	declared := string(m[1])

	public := goList(t, "-f", "{{if not (or .Standard (eq .Name \"main\"))}}{{.ImportPath}}{{end}}", "./...")
	var pkgs []string
	for _, p := range public {
		if !strings.Contains(p+"/", "/internal/") {
			pkgs = append(pkgs, p)
		}
	}
	require.Contains(t, pkgs, "github.com/errown/errown/grpcgo", "the public packages")
	deps := goList(t, append([]string{"-deps", "-f", "{{if .Module}}{{if not .Module.Main}}{{.Module.Path}} {{.Module.GoVersion}}{{end}}{{end}}"}, pkgs...)...)
	highest, by := "", ""
	for _, line := range deps {
		path, v, _ := strings.Cut(line, " ")
		if v != "" && versionLess(highest, v) {
			highest, by = v, path
		}
	}
	require.Equal(t, highest, declared, "go.mod's go directive must be the highest any dependency needs (%s needs %s)", by, highest)
}

// goList runs go list on errown's module alone and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	require.NoError(t, err, "go list %s", strings.Join(args, " "))
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// versionLess compares Go versions such as 1.22 and 1.26.0.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			x = atoi(pa[i])
		}
		if i < len(pb) {
			y = atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
