// Command abigen writes every guest SDK's copy of the ABI's constants from
// the one source, abi/abi.go: the Go SDK's abi.go, the Rust crate's
// src/abi.rs, the AssemblyScript package's assembly/abi.ts and the block of
// #defines in the C header. Each SDK is copied whole into a plugin project by
// `voxhost plugin new`, so each carries its constants rather than importing
// them; this program makes those copies, and its test fails when one has
// drifted from abi.go.
//
// Run from abi/: go generate (abi.go's go:generate line).
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/constant"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// group is one const declaration of abi.go: its doc comment and constants.
type group struct {
	doc    []string
	consts []abiConst
}

// abiConst is one constant: its Go name, value and doc comment lines.
type abiConst struct {
	name  string
	value constant.Value
	doc   []string
}

// readABI parses abi.go's constants in their order, with their comments.
func readABI(src []byte) ([]group, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "abi.go", src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	values := map[string]constant.Value{}
	var eval func(ast.Expr) (constant.Value, error)
	eval = func(e ast.Expr) (constant.Value, error) {
		switch e := e.(type) {
		case *ast.BasicLit:
			return constant.MakeFromLiteral(e.Value, e.Kind, 0), nil
		case *ast.UnaryExpr:
			x, err := eval(e.X)
			if err != nil {
				return nil, err
			}
			return constant.UnaryOp(e.Op, x, 0), nil
		case *ast.Ident:
			if v, ok := values[e.Name]; ok {
				return v, nil
			}
		}
		return nil, fmt.Errorf("abi.go:%d: the generator takes literals and names of earlier constants only", fset.Position(e.Pos()).Line)
	}
	var groups []group
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		g := group{doc: commentLines(gen.Doc)}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if len(vs.Names) != 1 || len(vs.Values) != 1 {
				return nil, fmt.Errorf("abi.go:%d: one constant per line", fset.Position(vs.Pos()).Line)
			}
			v, err := eval(vs.Values[0])
			if err != nil {
				return nil, err
			}
			values[vs.Names[0].Name] = v
			g.consts = append(g.consts, abiConst{name: vs.Names[0].Name, value: v, doc: commentLines(vs.Doc)})
		}
		if !gen.Lparen.IsValid() {
			// const X = 1 with its comment above: the comment is the constant's.
			g.consts[0].doc, g.doc = g.doc, nil
		}
		groups = append(groups, g)
	}
	return groups, nil
}

func commentLines(cg *ast.CommentGroup) []string {
	if cg == nil {
		return nil
	}
	return strings.Split(strings.TrimRight(cg.Text(), "\n"), "\n")
}

const origin = "abi/abi.go by abi/internal/abigen (go generate ./abi)"

// generated is a generated file: the line that says so, an introduction
// (comment lines with their markers), then each group of constants, after
// its doc comment, as line writes it.
func generated(comment, intro string, groups []group, line func(b *bytes.Buffer, g group)) *bytes.Buffer {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%sCode generated from %s; DO NOT EDIT.\n\n%s", comment, origin, intro)
	for _, g := range groups {
		b.WriteByte('\n')
		writeComment(&b, "", comment, g.doc)
		line(&b, g)
	}
	return &b
}

// goSDK is sdk/go/abi.go.
func goSDK(groups []group) ([]byte, error) {
	b := generated("// ", "package voxhost\n\n"+
		"// The constants of package abi (abi/ABI.md) by the same names and values.\n"+
		"// They are untyped, so a status can be returned from Process (an int) as\n"+
		"// well as compared with an Event's Kind (an int32).\n", groups, func(b *bytes.Buffer, g group) {
		if len(g.consts) == 1 && len(g.doc) == 0 {
			c := g.consts[0]
			writeComment(b, "", "// ", c.doc)
			fmt.Fprintf(b, "const %s = %s\n", c.name, c.value.ExactString())
			return
		}
		b.WriteString("const (\n")
		for _, c := range g.consts {
			writeComment(b, "\t", "// ", c.doc)
			fmt.Fprintf(b, "\t%s = %s\n", c.name, c.value.ExactString())
		}
		b.WriteString(")\n")
	})
	return format.Source(b.Bytes())
}

// upperSnake is a name's C and Rust spelling: MaxEmitNameLen ->
// MAX_EMIT_NAME_LEN, EventDTMF -> EVENT_DTMF, StatusOK -> STATUS_OK.
func upperSnake(goName string) string {
	if goName == "Version" {
		return "ABI_VERSION"
	}
	r := []rune(goName)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) &&
			(unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(c))
	}
	return b.String()
}

// rustType is the type a constant has in the Rust crate: sizes are usize
// (they index slices), the rate u32, other numbers i32 like the ABI's.
func rustType(c abiConst) string {
	switch {
	case c.value.Kind() == constant.String:
		return "&str"
	case strings.HasPrefix(c.name, "Max") || strings.HasSuffix(c.name, "Bytes") || strings.HasSuffix(c.name, "Align"):
		return "usize"
	case c.name == "TelephonyRate":
		return "u32"
	}
	return "i32"
}

// rustSDK is sdk/rust/src/abi.rs.
func rustSDK(groups []group) []byte {
	return generated("// ", "//! The numbers and names of the voxhost plugin ABI v1 (normative text:\n"+
		"//! `abi/ABI.md`), under the names of `abi/abi.go` in upper snake case.\n", groups, func(b *bytes.Buffer, g group) {
		for _, c := range g.consts {
			writeComment(b, "", "/// ", c.doc)
			fmt.Fprintf(b, "pub const %s: %s = %s;\n", upperSnake(c.name), rustType(c), c.value.ExactString())
		}
	}).Bytes()
}

// asSDK is sdk/assemblyscript/assembly/abi.ts. The strings are @lazy: asc
// then puts one in the module's data only if the plugin uses it, rather
// than every name in front of the plugin's own data.
func asSDK(groups []group) []byte {
	return generated("// ", "// The names and numbers of the voxhost plugin ABI v1 (abi/ABI.md), under the\n"+
		"// names of abi/abi.go. The strings are @lazy: asc puts one in the module's\n"+
		"// data only if the plugin uses it.\n", groups, func(b *bytes.Buffer, g group) {
		for _, c := range g.consts {
			if len(c.doc) > 0 {
				b.WriteString("/** " + strings.Join(c.doc, " ") + " */\n")
			}
			if c.value.Kind() == constant.String {
				fmt.Fprintf(b, "// @ts-ignore: decorator\n@lazy\nexport const %s: string = %s;\n", c.name, c.value.ExactString())
			} else {
				fmt.Fprintf(b, "export const %s: i32 = %s;\n", c.name, c.value.ExactString())
			}
		}
	}).Bytes()
}

// The C header is one file a project copies, so its constants are a block
// inside it, between these lines.
const (
	cBegin = "/* ---- generated from " + origin + "; do not edit ---- */\n"
	cEnd   = "/* ---- end of the generated constants ---- */\n"
)

// cName is a constant's C spelling: VOX_ and the upper snake name, the
// statuses without STATUS_ (VOX_BAD_CONFIG), as the header always had them.
func cName(goName string) string {
	return "VOX_" + strings.TrimPrefix(upperSnake(goName), "STATUS_")
}

// cSDK is the header with its generated block replaced.
func cSDK(groups []group, header []byte) ([]byte, error) {
	begin, end := bytes.Index(header, []byte(cBegin)), bytes.Index(header, []byte(cEnd))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("sdk/c/voxhost.h lacks the lines %q and %q around its constants", cBegin, cEnd)
	}
	var b bytes.Buffer
	b.Write(header[:begin])
	b.WriteString(cBegin)
	for i, g := range groups {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeComment(&b, "", "", blockComment(g.doc))
		for _, c := range g.consts {
			writeComment(&b, "", "", blockComment(c.doc))
			v := c.value.ExactString()
			if c.value.Kind() == constant.Int && constant.Sign(c.value) < 0 {
				v = "(" + v + ")"
			}
			fmt.Fprintf(&b, "#define %s %s\n", cName(c.name), v)
		}
	}
	b.WriteString(cEnd)
	b.Write(header[end+len(cEnd):])
	return b.Bytes(), nil
}

// blockComment makes a C comment of doc lines.
func blockComment(doc []string) []string {
	if len(doc) == 0 {
		return nil
	}
	out := make([]string, len(doc))
	for i, l := range doc {
		out[i] = " * " + l
	}
	out[0] = "/* " + doc[0]
	if len(doc) == 1 {
		out[0] += " */"
		return out
	}
	return append(out, " */")
}

func writeComment(b *bytes.Buffer, indent, prefix string, lines []string) {
	for _, l := range lines {
		b.WriteString(strings.TrimRight(indent+prefix+l, " ") + "\n")
	}
}

// generate returns every generated file's path, relative to the
// repository's root, and content; root is the repository's root.
func generate(root string) (map[string][]byte, error) {
	src, err := os.ReadFile(filepath.Join(root, "abi", "abi.go"))
	if err != nil {
		return nil, err
	}
	groups, err := readABI(src)
	if err != nil {
		return nil, err
	}
	header, err := os.ReadFile(filepath.Join(root, "sdk", "c", "voxhost.h"))
	if err != nil {
		return nil, err
	}
	c, err := cSDK(groups, header)
	if err != nil {
		return nil, err
	}
	goFile, err := goSDK(groups)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"sdk/go/abi.go":                      goFile,
		"sdk/rust/src/abi.rs":                rustSDK(groups),
		"sdk/assemblyscript/assembly/abi.ts": asSDK(groups),
		"sdk/c/voxhost.h":                    c,
	}, nil
}

func main() {
	files, err := generate("..")
	if err == nil {
		for path, content := range files {
			if err = os.WriteFile(filepath.Join("..", path), content, 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "abigen:", err)
		os.Exit(1)
	}
}
