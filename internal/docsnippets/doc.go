// Package docsnippets holds the Go blocks of README.md and docs/*.md that
// are not whole files, each in a function of its own, so that the build
// compiles what the documentation shows. TestDocGoBlocks (readme_test.go
// at the module's root) checks that every Go block of those pages appears
// line for line in a file of the module that the build compiles. Nothing
// here is run.
package docsnippets
