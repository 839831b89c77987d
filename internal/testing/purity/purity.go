// Package purity checks that a package of rules is pure: it reads the
// package's own source and fails a test on an import outside a short list of
// the standard library, a goroutine, a clock other than the one its caller
// passes in, or a JSON shape. The rules (reaper/judge, heartbeat) call it from
// a test of their own, so the guarantee holds without a module of their own.
package purity

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// StandardLibrary is what a rule may import of the standard library:
// computation only. No net, os, database/sql, log or sync: a rule never
// waits, reads or logs.
var StandardLibrary = []string{"cmp", "errors", "fmt", "maps", "math", "slices", "sort", "strconv", "strings", "time", "unicode"}

// Check reads the non-test Go files of dir and reports, as errors of t,
// every import that is neither in StandardLibrary nor in also (other pure
// packages of this module), every go statement, every call of time.Now,
// time.Since or time.Until, and every struct tag or JSON method (what
// commands print is shaped outside the rules). clock names the clock the
// rules use instead, for the message.
func Check(t *testing.T, dir, clock string, also ...string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	allowed := slices.Concat(StandardLibrary, also)
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		name := filepath.Base(path)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(allowed, p) {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a goroutine at %s", name, fset.Position(n.Pos()))
			case *ast.Field:
				if n.Tag != nil {
					t.Errorf("%s: a struct tag %s at %s", name, n.Tag.Value, fset.Position(n.Pos()))
				}
			case *ast.FuncDecl:
				if n.Name.Name == "MarshalJSON" || n.Name.Name == "UnmarshalJSON" {
					t.Errorf("%s: %s at %s", name, n.Name.Name, fset.Position(n.Pos()))
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && (n.Sel.Name == "Now" || n.Sel.Name == "Since" || n.Sel.Name == "Until") {
					t.Errorf("%s: time.%s at %s: the rules' clock is %s", name, n.Sel.Name, fset.Position(n.Pos()), clock)
				}
			}
			return true
		})
	}
}

// CheckDeps lists, with the go command, every package dir's package depends
// on, and reports each that is not in the standard library or in also: the
// rules compile in nothing that does I/O, however indirectly.
func CheckDeps(t *testing.T, dir string, also ...string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps in %s: %v", dir, err)
	}
	self, err := exec.Command("go", "list", dir).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", dir, err)
	}
	for _, dep := range bytes.Fields(out) {
		if d := string(dep); d != string(bytes.TrimSpace(self)) && !slices.Contains(also, d) {
			t.Errorf("%s depends on %s, outside the standard library", dir, d)
		}
	}
}
