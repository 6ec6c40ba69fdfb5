package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryTestPicksAGroup reads this directory's sources: each top-level
// test must start with alone(t), parallel(t) or eachPath (which calls
// parallel). A test that called neither would run in both of make
// test-e2e's processes, and one that kills the operator without alone(t)
// would kill it under the parallel tests.
func TestEveryTestPicksAGroup(t *testing.T) {
	parallel(t)
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" || fn.Body == nil {
				continue
			}
			checked++
			if len(fn.Body.List) == 0 || !picksGroup(fn.Body.List[0]) {
				t.Errorf("%s (%s): the first statement must be alone(t), parallel(t) or eachPath(...)", fn.Name.Name, fset.Position(fn.Pos()))
			}
		}
	}
	if checked < 40 {
		t.Errorf("checked %d tests: the parse missed some", checked)
	}
}

func picksGroup(s ast.Stmt) bool {
	e, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := e.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := call.Fun.(*ast.Ident)
	return ok && (id.Name == "alone" || id.Name == "parallel" || id.Name == "eachPath")
}
