// Package tools pins the Go programs the quality gates run (staticcheck,
// and actionlint on the GitHub workflows) in a module of its own: `go tool
// -modfile=tools/go.mod staticcheck` builds them once into the build cache
// like any module (`make tools` builds them into .cache/tools/bin), and the
// program's go.mod stays free of their requirements.
package tools
