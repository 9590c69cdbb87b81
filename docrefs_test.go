package uncomplicated_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docRef is a comment's reference to a name of the root package:
// uncomplicated.X, or uncomplicated.X.Y for a method or field of X.
var docRef = regexp.MustCompile(`\buncomplicated\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?`)

// Every comment of the library that sends its reader to a name of the
// root package ("see uncomplicated.Mutex.Lock") names one that go doc
// shows.
func TestDocRefs_resolve(t *testing.T) {
	names := rootNames(rootDoc(t))
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || isModule(path)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			for _, m := range docRef.FindAllStringSubmatch(cg.Text(), -1) {
				if ref := strings.TrimSuffix(m[1]+"."+m[2], "."); !names[ref] {
					t.Errorf("%s: %q names nothing that go doc shows in package uncomplicated", fset.Position(cg.Pos()), m[0])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isModule reports whether the folder at path is a module of its own.
func isModule(path string) bool {
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// rootNames lists what go doc shows of pkg: its functions, types, values,
// and each type's methods, functions and fields, as "X" and "X.Y".
func rootNames(pkg *doc.Package) map[string]bool {
	names := map[string]bool{}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				names[n] = true
			}
		}
	}
	values(pkg.Consts)
	values(pkg.Vars)
	for _, f := range pkg.Funcs {
		names[f.Name] = true
	}
	for _, dt := range pkg.Types {
		names[dt.Name] = true
		values(dt.Consts)
		values(dt.Vars)
		for _, f := range dt.Funcs {
			names[f.Name] = true
		}
		for _, m := range dt.Methods {
			names[dt.Name+"."+m.Name] = true
		}
		for _, s := range dt.Decl.Specs {
			if ts, ok := s.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					for _, fl := range st.Fields.List {
						for _, n := range fl.Names {
							names[dt.Name+"."+n.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}
