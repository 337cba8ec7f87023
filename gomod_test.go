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
// library asks for the Go its dependencies need, not the newest.
func TestGoDirectiveIsTheLowestNeeded(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	require.NotNil(t, m, "go.mod has no go directive")
	declared := string(m[1])

	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if not .Module.Main}}{{.Module.Path}} {{.Module.GoVersion}}{{end}}{{end}}",
		".", "./inbound", "./outbound", "./retry", "./depmem", "./ownership", "./egresslog", "./ingresslog", "./fxtest").Output()
	require.NoError(t, err)
	highest, by := "", ""
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, v, _ := strings.Cut(line, " ")
		if v != "" && versionLess(highest, v) {
			highest, by = v, path
		}
	}
	require.Equal(t, highest, declared, "go.mod's go directive must be the highest any dependency needs (%s needs %s)", by, highest)
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
