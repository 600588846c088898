package house

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tree is a Go module's packages as its source files show them.
type tree struct {
	// module is the module path of go.mod.
	module string
	// pkgs are the module's packages by their slash path below the module
	// root ("conformance/kit"; "." for the root).
	pkgs map[string]*pkg
}

// pkg is one directory of .go files. Files with build constraints are
// counted like any other: the house's rules hold for every platform.
type pkg struct {
	path string
	// files and lines count the non-test .go files and their lines.
	files, lines int
	// methods counts the methods declared in non-test files per receiver
	// type name.
	methods map[string]int
	// imports are the module's packages it imports, by path below the
	// module root, with a file of each kind that does.
	imports map[string]*use
}

// use says which files import a package: the first non-test file (code)
// and the first test file (test) in name order, "" where none does.
type use struct{ code, test string }

// readTree reads the module rooted at root (the directory of its go.mod)
// from its source: every directory below it holding .go files is a package,
// but for testdata, vendor, directories whose name starts with "." or "_",
// and nested modules (a directory with a go.mod of its own).
func readTree(root string) (*tree, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	t := &tree{module: module, pkgs: map[string]*pkg{}}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		return t.addFile(fset, root, p)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// addFile parses the file at p and adds what it holds to its package.
func (t *tree) addFile(fset *token.FileSet, root, p string) error {
	src, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return err
	}
	rel = filepath.ToSlash(rel)
	dir := pathDir(rel)
	k := t.pkgs[dir]
	if k == nil {
		k = &pkg{path: dir, methods: map[string]int{}, imports: map[string]*use{}}
		t.pkgs[dir] = k
	}
	test := strings.HasSuffix(rel, "_test.go")
	if !test {
		k.files++
		k.lines += countLines(src)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil && len(fn.Recv.List) == 1 {
				if name := receiverType(fn.Recv.List[0].Type); name != "" {
					k.methods[name]++
				}
			}
		}
	}
	for _, imp := range f.Imports {
		ip, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return fmt.Errorf("%s: import %s: %w", rel, imp.Path.Value, err)
		}
		to, ok := t.local(ip)
		if !ok {
			continue
		}
		u := k.imports[to]
		if u == nil {
			u = &use{}
			k.imports[to] = u
		}
		first := &u.code
		if test {
			first = &u.test
		}
		if *first == "" || rel < *first {
			*first = rel
		}
	}
	return nil
}

// local returns an import path of the module as a path below its root.
func (t *tree) local(importPath string) (string, bool) {
	if importPath == t.module {
		return ".", true
	}
	rest, ok := strings.CutPrefix(importPath, t.module+"/")
	return rest, ok
}

// pathDir is the directory of a slash path, "." for a file at the root.
func pathDir(rel string) string {
	if i := strings.LastIndex(rel, "/"); i >= 0 {
		return rel[:i]
	}
	return "."
}

// countLines counts src's lines, a last one without a newline included.
func countLines(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// receiverType is the name of a method's receiver type: T for T, *T,
// T[K] and *T[K, V].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// modulePath reads the module path from a go.mod file.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	return "", errors.New(gomod + ": no module line")
}
