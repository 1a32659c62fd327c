package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// callRule confines calls of some functions to the packages that own a decision (the one
// path docs/architecture.md tables): a call anywhere else is a second copy of the decision.
type callRule struct {
	// funcs are "import/path.Func" names.
	funcs []string
	// allowed are the packages (relative to the module root, "/..." for a subtree) that may
	// call them; forbidden, when set, limits the rule to those packages instead.
	allowed, forbidden []string
	why                string
}

var callRules = []callRule{
	{
		funcs:   []string{module + "/simulation/solver.New"},
		allowed: []string{"plugin/planner", "controller/disruption"},
		why: "the solver is built by the plugin's planner and by disruption.NewSimulation only, so " +
			"joinery-scheduler, joinery-controller and the CLI cannot plan with different options",
	},
	{
		funcs: []string{
			"k8s.io/apimachinery/pkg/api/meta.IsStatusConditionTrue",
			"k8s.io/apimachinery/pkg/api/meta.IsStatusConditionFalse",
			"k8s.io/apimachinery/pkg/api/meta.IsStatusConditionPresentAndEqual",
			"k8s.io/apimachinery/pkg/api/meta.FindStatusCondition",
		},
		forbidden: []string{"cli/..."},
		why: "cli/ does not re-implement the controller's predicates over objects' conditions: it " +
			"prints what the controller's own functions decide (disruption.DryRun, disruption.Explain)",
	},
}

// sourcePackage is what go list reports of a package's non-test sources.
type sourcePackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
}

// TestCallRules checks every call of the module's non-test code against callRules.
func TestCallRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,GoFiles", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	fset := token.NewFileSet()
	called := map[string]bool{}
	for {
		var p sourcePackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v", err)
		}
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, fn := range calls(f) {
				called[fn] = true
				if rule := callRuleBroken(rel, fn); rule != "" {
					t.Errorf("%s (%s) calls %s: %s", p.ImportPath, name, fn, rule)
				}
			}
		}
	}
	for _, r := range callRules {
		if r.allowed != nil && !slices.ContainsFunc(r.funcs, func(fn string) bool { return called[fn] }) {
			t.Errorf("no package calls %v any more: update the rule (%s)", r.funcs, r.why)
		}
	}
}

// callRuleBroken returns the rule a call of fn from package rel breaks, or "".
func callRuleBroken(rel, fn string) string {
	for _, r := range callRules {
		if !slices.Contains(r.funcs, fn) {
			continue
		}
		in := func(patterns []string) bool {
			return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, rel) })
		}
		if (r.allowed != nil && !in(r.allowed)) || (r.forbidden != nil && in(r.forbidden)) {
			return r.why
		}
	}
	return ""
}

// calls returns the package-qualified functions f calls ("import/path.Func").
func calls(f *ast.File) []string {
	imports := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imports[name] = path
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] != "" {
				out = append(out, imports[id.Name]+"."+sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

// TestCallRuleBroken pins the call rules on calls they must refuse or allow.
func TestCallRuleBroken(t *testing.T) {
	tests := []struct {
		from, fn string
		refused  bool
	}{
		{from: "controller/disruption", fn: module + "/simulation/solver.New"},
		{from: "plugin/planner", fn: module + "/simulation/solver.New"},
		{from: "app/internal/controller", fn: module + "/simulation/solver.New", refused: true},
		{from: "cli/whatif", fn: module + "/simulation/solver.New", refused: true},
		{from: "cli/whatif", fn: "k8s.io/apimachinery/pkg/api/meta.FindStatusCondition", refused: true},
		{from: "controller/disruption", fn: "k8s.io/apimachinery/pkg/api/meta.FindStatusCondition"},
	}
	for _, tt := range tests {
		if got := callRuleBroken(tt.from, tt.fn) != ""; got != tt.refused {
			t.Errorf("%s calling %s: refused %v, want %v", tt.from, tt.fn, got, tt.refused)
		}
	}
}
