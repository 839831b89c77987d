package judge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedImports are what the judge's own files may import: computation
// only. Its go.mod requires nothing, so no module outside the standard
// library compiles in; this list keeps the standard library's I/O out too
// (net, os, database/sql, log, sync: a rule never waits, reads or logs).
var allowedImports = []string{"cmp", "fmt", "maps", "math", "slices", "sort", "strconv", "strings", "time", "unicode", "errors"}

// TestJudgeIsPure reads the judge's source: no import outside
// allowedImports, no goroutine, no clock but the snapshot's, no JSON shape
// (a struct tag, or a MarshalJSON: what commands print is pass's and
// redislocks', pass/judge_json.go), and a go.mod with no requirement. It
// needs nothing but the files themselves.
func TestJudgeIsPure(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	require.False(t, strings.Contains(string(mod), "require"), "the judge's go.mod requires nothing")

	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(allowedImports, path) {
				t.Errorf("%s imports %s", name, path)
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
					t.Errorf("%s: time.%s at %s: the judge's clock is Snapshot.Now", name, n.Sel.Name, fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}
