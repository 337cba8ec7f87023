package depcontract

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPinnedVersions: the yarpc and tally errown builds with (go list -m:
// go.mod's versions, replacements included) are those whose internals
// this package was checked against. When go.mod moves either, check
// chain.go and tally.go against the new version's sources (and their
// tests here), then update _yarpcVersion or _tallyVersion.
func TestPinnedVersions(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{"go.uber.org/yarpc", _yarpcVersion},
		{"github.com/uber-go/tally/v4", _tallyVersion},
	}
	for _, tt := range tests {
		out, err := exec.Command("go", "list", "-m", "-f", "{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}", tt.give).Output()
		require.NoError(t, err, "go list -m %s", tt.give)
		assert.Equal(t, tt.want, strings.TrimSpace(string(out)),
			"%s moved: check what package depcontract reaches of it against the new sources, then update its pinned version", tt.give)
	}
}
