package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// _readme is the repository's README, whose quick start this program is.
var _readme = filepath.Join("..", "..", "README.md")

// _readmeStart is how the README begins: its title and the two set-up
// commands. What errown does and the table of contents come next, then
// the quick start.
const _readmeStart = "# errown\n\n```sh\n" +
	"go run ./cmd/stormsim   # the storm demo: a 7-service chain under three retry policies\n" +
	"make test               # the whole test suite (installs what it needs first)\n" +
	"```\n\n"

// _quickStart is the quick start's heading.
const _quickStart = "\n## Quick start\n"

// TestREADMEQuickStart holds the README's quick start and this program
// together: its Go block is main.go and its YAML block config.yaml,
// character for character, so what the README shows is what
// TestQuickstart runs.
func TestREADMEQuickStart(t *testing.T) {
	b, err := os.ReadFile(_readme)
	require.NoError(t, err)
	readme := string(b)
	require.True(t, strings.HasPrefix(readme, _readmeStart), "the README starts with its set-up commands:\n%s", readme[:min(len(readme), 400)])
	intro, section, ok := strings.Cut(readme[len(_readmeStart):], _quickStart)
	require.True(t, ok, "the README has a quick start")
	assert.NotContains(t, intro, "\n## ", "the quick start is the README's first section")
	assert.NotContains(t, intro, "```", "no code comes between the set-up commands and the quick start")

	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	tests := []struct {
		give string // the block's language
		want string // the file it shows
	}{
		{give: "go", want: "main.go"},
		{give: "yaml", want: "config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			file, err := os.ReadFile(tt.want)
			require.NoError(t, err)
			blocks := codeBlocks(section, tt.give)
			require.Len(t, blocks, 1, "one %s block in the quick start", tt.give)
			assert.Equal(t, string(file), blocks[0], "the README's quick start and examples/quickstart/%s differ", tt.want)
		})
	}
}

// codeBlocks returns the fenced blocks of markdown in language lang, each
// with its final newline.
func codeBlocks(markdown, lang string) []string {
	var blocks []string
	open := "```" + lang + "\n"
	for {
		start := strings.Index(markdown, open)
		if start < 0 {
			return blocks
		}
		body := markdown[start+len(open):]
		end := strings.Index(body, "\n```\n")
		if end < 0 {
			return append(blocks, body)
		}
		blocks = append(blocks, body[:end+1])
		markdown = body[end+len("\n```\n"):]
	}
}

func TestCodeBlocks(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{give: "text\n```go\na\nb\n```\nmore\n```yaml\nc\n```\n```go\nd\n```\n", want: []string{"a\nb\n", "d\n"}},
		{give: "no code\n", want: nil},
		{give: "```go\nunterminated\n", want: []string{"unterminated\n"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, codeBlocks(tt.give, "go"), tt.give)
	}
}
