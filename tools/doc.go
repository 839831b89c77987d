// Package tools pins the Go programs the quality gates run (staticcheck) in
// a module of its own: `go tool -modfile=tools/go.mod staticcheck` builds
// them once into the build cache like any module, and the program's go.mod
// stays free of their requirements.
package tools
