package abi_test

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// constants parses the named Go files and returns their package-level
// constants whose values are literals, or expressions of literals and of
// constants defined before them, and the names of the others (iota, typed
// enumerations), which it skips.
func constants(t *testing.T, files []string) (values map[string]constant.Value, skipped []string) {
	t.Helper()
	values = map[string]constant.Value{}
	var eval func(ast.Expr) constant.Value
	eval = func(e ast.Expr) constant.Value {
		switch e := e.(type) {
		case *ast.BasicLit:
			return constant.MakeFromLiteral(e.Value, e.Kind, 0)
		case *ast.ParenExpr:
			return eval(e.X)
		case *ast.Ident:
			return values[e.Name]
		case *ast.UnaryExpr:
			if x := eval(e.X); x != nil {
				return constant.UnaryOp(e.Op, x, 0)
			}
		case *ast.BinaryExpr:
			x, y := eval(e.X), eval(e.Y)
			if x != nil && y != nil {
				if e.Op == token.QUO && x.Kind() == constant.Int && y.Kind() == constant.Int {
					return constant.BinaryOp(x, token.QUO_ASSIGN, y) // integer division
				}
				return constant.BinaryOp(x, e.Op, y)
			}
		}
		return nil
	}
	// Files in name order, so a constant defined from another one finds it.
	sort.Strings(files)
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					var v constant.Value
					if i < len(vs.Values) {
						v = eval(vs.Values[i])
					}
					if v == nil {
						skipped = append(skipped, id.Name)
						continue
					}
					values[id.Name] = v
				}
			}
		}
	}
	return values, skipped
}

// TestGoSDKAgreesWithABI checks that sdk/go defines every constant of
// abi/abi.go, by the same name and with the same value.
func TestGoSDKAgreesWithABI(t *testing.T) {
	want, skipped := constants(t, []string{"abi.go"})
	if len(skipped) > 0 || len(want) == 0 {
		t.Fatalf("cannot evaluate the constants %q of abi.go", skipped)
	}
	files, err := filepath.Glob(filepath.Join("..", "sdk", "go", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in sdk/go: %v", err)
	}
	var sources []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			sources = append(sources, f)
		}
	}
	got, _ := constants(t, sources)
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("sdk/go lacks %s = %s", name, w)
		case !constant.Compare(g, token.EQL, w):
			t.Errorf("sdk/go has %s = %s, abi/abi.go has %s", name, g, w)
		}
	}
}
