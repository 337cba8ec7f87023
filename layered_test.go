package errown_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/errown/errown"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/config"
	"go.uber.org/fx"
	"go.uber.org/yarpc"
)

// TestLayeredConfigTypo: the configuration of base file and override
// file, merged by config.NewYAML as go.uber.org/config is used, fails
// start when the override misspells errown beside the base's errown key,
// naming the key, the fix and, when the application provides its files,
// the file.
func TestLayeredConfigTypo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		return path
	}
	base := write("base.yaml", "errown:\n  retry:\n    budget:\n      ratio: 0.2\n")
	tests := []struct {
		name     string
		override string
		files    bool   // the application provides errown.ConfigFiles
		wantErr  string // "": start succeeds
	}{
		{
			name:     "errwon in the override",
			override: "errwon:\n  mode: observe\n",
			wantErr:  `errown: config: found top-level key "errwon" beside errown, did you mean errown? it holds errown's keys (mode), which errown would ignore: move them under errown`,
		},
		{
			name:     "errwon in the override, files known",
			override: "errwon:\n  mode: observe\n",
			files:    true,
			wantErr:  `found top-level key "errwon" (in ` + filepath.Join(dir, "override-1.yaml") + `) beside errown, did you mean errown?`,
		},
		{name: "errown in the override", override: "errown:\n  mode: observe\n", files: true},
		{name: "the application's own near key in the override", override: "Errown:\n  theirs: true\n", files: true},
		{
			name:     "an unknown key in the override's errown section",
			override: "errown:\n  mdoe: observe\n",
			wantErr:  "errown: config: mdoe: unknown key, did you mean mode?",
		},
		{
			name:     "an unknown key in the override's errown section, files known",
			override: "errown:\n  mdoe: observe\n  retry:\n    budget:\n      ratio: 0.5\n      windw: 10s\n",
			files:    true,
			wantErr: "errown: config: mdoe: unknown key, did you mean mode? (in " + filepath.Join(dir, "override-5.yaml") + "); " +
				"retry.budget.windw: unknown key, did you mean window? (in " + filepath.Join(dir, "override-5.yaml") + ")",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			override := write("override-"+string(rune('0'+i))+".yaml", tt.override)
			files := errown.ConfigFiles(nil)
			if tt.files {
				files = errown.ConfigFiles{base, override}
			}
			err := startErr(t,
				fx.Provide(func() (*config.YAML, error) { return config.NewYAML(config.File(base), config.File(override)) }),
				fx.Provide(yarpcConfig, dispatcherFromConfig),
				errown.Module,
				fx.Invoke(func(*yarpc.Dispatcher) {}),
				fx.Supply(files),
			)
			assert.Equal(t, tt.wantErr == "", err == nil, "start succeeds: %v", err)
			assert.Contains(t, fmt.Sprint(err), tt.wantErr)
		})
	}
}
