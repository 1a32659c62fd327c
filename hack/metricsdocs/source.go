package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// The packages whose constructors define metrics, and the constructors with their types.
var (
	metricPackages = map[string]bool{
		"github.com/prometheus/client_golang/prometheus": true,
		"k8s.io/component-base/metrics":                  true,
	}
	constructors = map[string]struct {
		kind string
		vec  bool
	}{
		"NewCounter": {"counter", false}, "NewCounterVec": {"counter", true},
		"NewGauge": {"gauge", false}, "NewGaugeVec": {"gauge", true},
		"NewHistogram": {"histogram", false}, "NewHistogramVec": {"histogram", true},
		"NewSummary": {"summary", false}, "NewSummaryVec": {"summary", true},
	}
)

// metric is one metric definition found in the source.
type metric struct {
	name, kind, help, pkg string
	labels                []string
	pos                   token.Position
}

// source holds the parsed files of every package seen, by import path, so constants can be
// resolved across packages.
type source struct {
	fset  *token.FileSet
	files map[string][]*ast.File
}

func newSource() *source { return &source{fset: token.NewFileSet(), files: map[string][]*ast.File{}} }

func (s *source) parse(pkg string, paths []string) error {
	if _, ok := s.files[pkg]; ok {
		return nil
	}
	var files []*ast.File
	for _, path := range paths {
		f, err := parser.ParseFile(s.fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		files = append(files, f)
	}
	s.files[pkg] = files
	return nil
}

// Registries a binary serves, by the import path of the package holding them.
const (
	controllerRuntimeRegistry = "sigs.k8s.io/controller-runtime/pkg/metrics"
	legacyRegistry            = "k8s.io/component-base/metrics/legacyregistry"
)

// key names a package-level variable.
type key struct{ pkg, name string }

// registration is a collector registered with a registry by a package.
type registration struct {
	registry, by string
	collector    key
	inline       *metric // a collector constructed in the registering call itself
}

// scan returns the metrics package pkg defines, by the variable holding them, and the
// collectors it registers.
func (s *source) scan(pkg string) (map[key]metric, []registration, error) {
	defs := map[key]metric{}
	var regs []registration
	var firstErr error
	for _, f := range s.files[pkg] {
		imports := fileImports(f)
		// Definitions: package-level variables holding a constructor's result.
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					m, ok, err := s.constructed(pkg, imports, vs.Values[i])
					if err != nil {
						return nil, nil, err
					}
					if ok {
						defs[key{pkg, name.Name}] = m
					}
				}
			}
		}
		// Registrations: crmetrics.Registry.MustRegister(...) and legacyregistry.MustRegister(...).
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || firstErr != nil {
				return firstErr == nil
			}
			registry := registryOf(imports, call.Fun)
			if registry == "" {
				return true
			}
			for _, arg := range call.Args {
				switch a := arg.(type) {
				case *ast.Ident:
					regs = append(regs, registration{registry: registry, by: pkg, collector: key{pkg, a.Name}})
				case *ast.SelectorExpr:
					if x, ok := a.X.(*ast.Ident); ok && imports[x.Name] != "" {
						regs = append(regs, registration{registry: registry, by: pkg, collector: key{imports[x.Name], a.Sel.Name}})
					}
				default:
					m, ok, err := s.constructed(pkg, imports, arg)
					if err != nil {
						firstErr = err
						return false
					}
					if ok {
						regs = append(regs, registration{registry: registry, by: pkg, inline: &m})
					}
				}
			}
			return true
		})
	}
	return defs, regs, firstErr
}

// registryOf names the registry a call registers with, or "" if it registers with none.
func registryOf(imports map[string]string, fun ast.Expr) string {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	switch sel.Sel.Name {
	case "MustRegister", "Register", "RawMustRegister", "RawRegister":
	default:
		return ""
	}
	switch x := sel.X.(type) {
	case *ast.Ident: // legacyregistry.MustRegister
		if imports[x.Name] == legacyRegistry {
			return legacyRegistry
		}
	case *ast.SelectorExpr: // crmetrics.Registry.MustRegister
		if id, ok := x.X.(*ast.Ident); ok && imports[id.Name] == controllerRuntimeRegistry && x.Sel.Name == "Registry" {
			return controllerRuntimeRegistry
		}
	}
	return ""
}

// constructed reads the metric e constructs, if e is a call of a known constructor.
func (s *source) constructed(pkg string, imports map[string]string, e ast.Expr) (metric, bool, error) {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return metric{}, false, nil
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return metric{}, false, nil
	}
	x, ok := sel.X.(*ast.Ident)
	c, known := constructors[sel.Sel.Name]
	if !ok || !known || !metricPackages[imports[x.Name]] || len(call.Args) == 0 {
		return metric{}, false, nil
	}
	m, err := s.metric(pkg, imports, call, c.kind, c.vec)
	if err != nil {
		return metric{}, false, fmt.Errorf("%s: %w", s.fset.Position(call.Pos()), err)
	}
	return m, true, nil
}

func (s *source) metric(pkg string, imports map[string]string, call *ast.CallExpr, kind string, vec bool) (metric, error) {
	m := metric{kind: kind, pkg: pkg, pos: s.fset.Position(call.Pos())}
	opts := call.Args[0]
	if u, ok := opts.(*ast.UnaryExpr); ok && u.Op == token.AND {
		opts = u.X
	}
	lit, ok := opts.(*ast.CompositeLit)
	if !ok {
		return m, fmt.Errorf("metric options must be a composite literal")
	}
	parts := map[string]string{}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		switch key.Name {
		case "Namespace", "Subsystem", "Name", "Help":
			v, err := s.str(pkg, imports, kv.Value)
			if err != nil {
				return m, fmt.Errorf("%s: %w", key.Name, err)
			}
			parts[key.Name] = v
		}
	}
	var name []string
	for _, p := range []string{parts["Namespace"], parts["Subsystem"], parts["Name"]} {
		if p != "" {
			name = append(name, p)
		}
	}
	m.name, m.help = strings.Join(name, "_"), strings.Join(strings.Fields(parts["Help"]), " ")
	if parts["Name"] == "" {
		return m, fmt.Errorf("metric has no Name")
	}
	if vec {
		if len(call.Args) < 2 {
			return m, fmt.Errorf("%s: a vector without labels", m.name)
		}
		labels, err := s.strs(pkg, imports, call.Args[1])
		if err != nil {
			return m, fmt.Errorf("%s labels: %w", m.name, err)
		}
		m.labels = labels
	}
	return m, nil
}

// str evaluates a string expression: literals, constants (of this package or another parsed
// one) and their concatenations.
func (s *source) str(pkg string, imports map[string]string, e ast.Expr) (string, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			return strconv.Unquote(e.Value)
		}
	case *ast.ParenExpr:
		return s.str(pkg, imports, e.X)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			a, err := s.str(pkg, imports, e.X)
			if err != nil {
				return "", err
			}
			b, err := s.str(pkg, imports, e.Y)
			return a + b, err
		}
	case *ast.Ident:
		if v, ok := s.lookup(pkg, e.Name, token.CONST); ok {
			return s.str(pkg, fileImportsOf(s, pkg, e.Name), v)
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			other := imports[x.Name]
			if v, ok := s.lookup(other, e.Sel.Name, token.CONST); ok {
				return s.str(other, fileImportsOf(s, other, e.Sel.Name), v)
			}
		}
	case *ast.CallExpr:
		// A conversion such as string(someTypedConst).
		if len(e.Args) == 1 {
			if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "string" {
				return s.str(pkg, imports, e.Args[0])
			}
		}
	}
	return "", fmt.Errorf("cannot evaluate %s statically; use a string literal or constant", s.text(e))
}

// strs evaluates a []string expression: a composite literal of strings, or a package-level
// variable holding one.
func (s *source) strs(pkg string, imports map[string]string, e ast.Expr) ([]string, error) {
	switch e := e.(type) {
	case *ast.CompositeLit:
		out := make([]string, 0, len(e.Elts))
		for _, elt := range e.Elts {
			v, err := s.str(pkg, imports, elt)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *ast.Ident:
		if e.Name == "nil" {
			return nil, nil
		}
		if v, ok := s.lookup(pkg, e.Name, token.VAR); ok {
			return s.strs(pkg, fileImportsOf(s, pkg, e.Name), v)
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			other := imports[x.Name]
			if v, ok := s.lookup(other, e.Sel.Name, token.VAR); ok {
				return s.strs(other, fileImportsOf(s, other, e.Sel.Name), v)
			}
		}
	}
	return nil, fmt.Errorf("cannot evaluate %s statically; use a []string literal or a variable holding one", s.text(e))
}

// lookup finds the value of a package-level constant or variable of pkg.
func (s *source) lookup(pkg, name string, tok token.Token) (ast.Expr, bool) {
	_, v := s.find(pkg, name, tok)
	return v, v != nil
}

func (s *source) find(pkg, name string, tok token.Token) (*ast.File, ast.Expr) {
	for _, f := range s.files[pkg] {
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != tok {
				continue
			}
			for _, spec := range gen.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, n := range vs.Names {
					if n.Name == name && i < len(vs.Values) {
						return f, vs.Values[i]
					}
				}
			}
		}
	}
	return nil, nil
}

// fileImportsOf is the import table of the file declaring name in pkg, for resolving its value.
func fileImportsOf(s *source, pkg, name string) map[string]string {
	for _, tok := range []token.Token{token.CONST, token.VAR} {
		if f, _ := s.find(pkg, name, tok); f != nil {
			return fileImports(f)
		}
	}
	return nil
}

// fileImports maps the names a file refers to its imports by to their paths.
func fileImports(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = path
	}
	return out
}

func (s *source) text(e ast.Expr) string {
	pos := s.fset.Position(e.Pos())
	return fmt.Sprintf("the expression at %s:%d", pos.Filename, pos.Line)
}
