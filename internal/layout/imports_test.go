package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is joinery's module path; imports outside it are not judged.
const module = "github.com/joinery-dev/joinery"

// Rooms of the repository. Neutral rooms know no provider; a provider's room is its folder.
const (
	roomAPIs          = "apis"          // apis (the scheme of all groups), apis/karpenter, apis/autoscaling
	roomProviderAPI   = "provider API"  // apis/<provider>: a provider's node-class API
	roomScheduling    = "scheduling"    // scheduling
	roomSimulation    = "simulation"    // simulation/...
	roomCloudProvider = "cloudprovider" // cloudprovider: the provider interface, instance types, offerings
	roomProvider      = "provider"      // cloudprovider/<provider>/...
	roomPlugin        = "plugin"        // plugin/...
	roomController    = "controller"    // controller/...
	roomCLI           = "cli"           // cli/...: the joinery CLI's engine over snapshots (simulate, explain, cost)
	roomApp           = "app"           // app/...: the binaries' wiring, a library for mains that add scheduler plugins
	roomCmd           = "cmd"           // cmd/...: the binaries' mains (thin: they call app)
	roomTooling       = "tooling"       // internal/..., hack/..., e2e/..., test/...: shared infrastructure and suites
)

// neutralAPIGroups are the API folders under apis/ that belong to no provider; any other
// folder apis/<name> is the API of the provider cloudprovider/<name>.
var neutralAPIGroups = []string{"karpenter", "autoscaling"}

// place is where a package lives: its room and, in a provider's rooms, the provider.
type place struct {
	room     string
	provider string
	// controllers is true for a provider's own controllers (cloudprovider/<provider>/controllers/...).
	controllers bool
}

func (p place) neutral() bool {
	switch p.room {
	case roomAPIs, roomScheduling, roomSimulation, roomCloudProvider, roomPlugin, roomController, roomCLI:
		return true
	}
	return false
}

func (p place) String() string {
	if p.provider != "" {
		return p.room + " " + p.provider
	}
	return p.room
}

// classify places a package by its path relative to the module root.
func classify(rel string) (place, bool) {
	parts := strings.Split(rel, "/")
	switch parts[0] {
	case "apis":
		if len(parts) == 1 || slices.Contains(neutralAPIGroups, parts[1]) {
			return place{room: roomAPIs}, true
		}
		return place{room: roomProviderAPI, provider: parts[1]}, true
	case "scheduling":
		return place{room: roomScheduling}, true
	case "simulation":
		return place{room: roomSimulation}, true
	case "cloudprovider":
		if len(parts) == 1 {
			return place{room: roomCloudProvider}, true
		}
		return place{room: roomProvider, provider: parts[1], controllers: len(parts) > 2 && parts[2] == "controllers"}, true
	case "plugin":
		return place{room: roomPlugin}, true
	case "controller":
		return place{room: roomController}, true
	case "cli":
		return place{room: roomCLI}, true
	case "app":
		return place{room: roomApp}, true
	case "cmd":
		return place{room: roomCmd}, true
	case "internal", "hack", "e2e", "test":
		return place{room: roomTooling}, true
	}
	return place{}, false
}

// oneWay lists, for each neutral room and the provider APIs, the rooms it may import: apis ←
// scheduling ← simulation ← {plugin, controller}; cloudprovider depends on apis and scheduling
// only; plugin and controller never import each other.
var oneWay = map[string][]string{
	roomAPIs:          {roomAPIs},
	roomProviderAPI:   {roomAPIs, roomProviderAPI},
	roomScheduling:    {roomAPIs, roomScheduling},
	roomCloudProvider: {roomAPIs, roomScheduling, roomCloudProvider},
	roomSimulation:    {roomAPIs, roomScheduling, roomCloudProvider, roomSimulation},
	roomPlugin:        {roomAPIs, roomScheduling, roomCloudProvider, roomSimulation, roomPlugin},
	roomController:    {roomAPIs, roomScheduling, roomCloudProvider, roomSimulation, roomController},
	// The CLI runs both binaries' engines offline, so it alone may use plugin and controller
	// together; it stays neutral (app hands it the provider).
	roomCLI: {roomAPIs, roomScheduling, roomCloudProvider, roomSimulation, roomPlugin, roomController, roomCLI},
}

// exception is an import the rules would refuse but the layout keeps on purpose.
type exception struct {
	from, to string // package paths relative to the module root; a trailing "/..." matches a subtree
	why      string
}

// exceptions are kept few and each says why.
var exceptions = []exception{
	{from: "apis", to: "apis/...", why: "the apis package is the scheme of every API group (controller-gen's root, the binaries' and tests' scheme)"},
	{from: "cloudprovider/kwok/...", to: "apis/aws/v1", why: "the kwok provider's catalog imitates EC2 and labels its instance types with EC2's well-known label keys"},
	{from: "cloudprovider/kwok/catalog/gen", to: "cloudprovider/aws/catalogdata", why: "the kwok catalog's generator (a build-time command) takes EC2's published facts (Neuron types, network bandwidth) from the AWS provider's data; the kwok provider embeds the generated catalog.json and imports neither"},
	{from: "cloudprovider/kwok/catalog/gen", to: "cloudprovider/aws/instancetype", why: "the kwok catalog's generator gives its types the pod-eni branch interfaces the AWS provider derives, from the same table"},
	{from: "plugin/integration/provisioning", to: "apis/aws/v1", why: "asks for a kwok reservation by EC2's reservation label key, which the kwok provider uses (above)"},
	{from: "cli/whatif", to: "internal/featuregates", why: "the CLI's simulation runs with Karpenter's gates as the binaries read them (whatif.Load); the package only parses the gate list and has no dependencies"},
	{from: "plugin/...", to: "internal/featuregates", why: "Karpenter's feature gates reach the plugin and its planner as plugin.Options.FeatureGates (FEATURE_GATES); the package only parses the gate list and has no dependencies"},
}

// referenceProvider is the provider neutral packages' tests may run on: kwok launches in-cluster
// nodes and needs no cloud.
const referenceProvider = "kwok"

// testSupport reports whether a package exists only for tests: suites against a real API
// server (.../integration) and fixtures shared by tests (.../fixtures).
func testSupport(rel string) bool {
	parts := strings.Split(rel, "/")
	return slices.Contains(parts, "integration") || slices.Contains(parts, "fixtures")
}

// check returns the rule an import from one package to another breaks, or "" when it is
// allowed. In tests (test files, and packages that exist only for tests), neutral packages may
// also use the shared infrastructure in internal/ and the reference provider.
func check(fromRel, toRel string, inTest bool) string {
	from, ok := classify(fromRel)
	if !ok {
		return ""
	}
	to, ok := classify(toRel)
	if !ok {
		return ""
	}
	if exceptionFor(fromRel, toRel) >= 0 {
		return ""
	}
	inTest = inTest || testSupport(fromRel)
	if inTest && from.neutral() {
		if to.room == roomTooling && strings.HasPrefix(toRel, "internal/") {
			return ""
		}
		if (to.room == roomProvider || to.room == roomProviderAPI) && to.provider == referenceProvider {
			return ""
		}
	}
	if to.room == roomCmd && from.room != roomCmd {
		return "nothing imports cmd/: the binaries' wiring is theirs alone"
	}
	if to.room == roomApp && from.room != roomApp && from.room != roomCmd && from.room != roomTooling {
		return "only mains import app/: it wires whole binaries (cmd/, and the suites' test binaries under e2e/)"
	}
	if from.neutral() && (to.room == roomProvider || to.room == roomProviderAPI) {
		return fmt.Sprintf("neutral packages import no provider package: %s is in the %s room, %s belongs to provider %q", fromRel, from.room, toRel, to.provider)
	}
	if allowed, ok := oneWay[from.room]; ok {
		if !slices.Contains(allowed, to.room) {
			return fmt.Sprintf("imports point one way: the %s room may import only %s, not the %s room", from.room, strings.Join(allowed, ", "), to.room)
		}
		if from.room == roomProviderAPI && to.room == roomProviderAPI && to.provider != from.provider {
			return fmt.Sprintf("a provider's API imports no other provider's API: %s is provider %q's, %s is provider %q's", fromRel, from.provider, toRel, to.provider)
		}
		return ""
	}
	switch from.room {
	case roomProvider:
		switch {
		case (to.room == roomProvider || to.room == roomProviderAPI) && to.provider != from.provider:
			return fmt.Sprintf("a provider is one folder: provider %q imports provider %q's %s", from.provider, to.provider, toRel)
		case to.room == roomPlugin:
			return "a provider never imports the scheduler plugin"
		case to.room == roomController && !from.controllers:
			return fmt.Sprintf("only a provider's own controllers (cloudprovider/%s/controllers/...) build on controller/", from.provider)
		case to.room == roomTooling && (!strings.HasPrefix(toRel, "internal/") || !inTest):
			return "a provider's code imports no shared infrastructure (internal/, hack/, e2e/, test/); its tests may use internal/"
		}
	case roomApp:
		// The binaries' wiring may use every room but cmd/.
	case roomTooling:
		// Shared infrastructure and the suites may use every room but cmd/.
	}
	return ""
}

// exceptionFor is the index of the exception that allows an import, or -1.
func exceptionFor(fromRel, toRel string) int {
	return slices.IndexFunc(exceptions, func(e exception) bool { return matches(e.from, fromRel) && matches(e.to, toRel) })
}

// matches reports whether rel is pattern, or lies under it when pattern ends in "/...".
func matches(pattern, rel string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == prefix || strings.HasPrefix(rel, prefix+"/")
	}
	return rel == pattern
}

// goPackage is what go list reports of one package.
type goPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// listPackages runs go list over the module: every package with its direct imports, its tests'
// included.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Error", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// relative is path relative to the module root, or false for a path outside the module.
func relative(path string) (string, bool) {
	if path == module {
		return "", true
	}
	return strings.CutPrefix(path, module+"/")
}

// TestImportRules checks every import of every package of the module, its tests' included,
// against the layout's rules and names each import that breaks one.
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; is the test run inside the module?", len(pkgs))
	}
	used := make([]bool, len(exceptions))
	for _, p := range pkgs {
		fromRel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		for _, imports := range []struct {
			kind  string
			paths []string
			test  bool
		}{{"imports", p.Imports, false}, {"test imports", p.TestImports, true}, {"external test imports", p.XTestImports, true}} {
			for _, imp := range imports.paths {
				toRel, ok := relative(imp)
				if !ok || toRel == fromRel {
					continue
				}
				if i := exceptionFor(fromRel, toRel); i >= 0 {
					used[i] = true
				}
				if rule := check(fromRel, toRel, imports.test); rule != "" {
					t.Errorf("%s %s %s: %s", p.ImportPath, imports.kind, imp, rule)
				}
			}
		}
	}
	for i, e := range exceptions {
		if !used[i] {
			t.Errorf("the exception %s -> %s (%s) allows no import any more: remove it", e.from, e.to, e.why)
		}
	}
}

// TestCheck pins the rules on imports the layout must refuse or allow.
func TestCheck(t *testing.T) {
	tests := []struct {
		from, to string
		inTest   bool
		refused  bool
	}{
		{from: "scheduling", to: "apis/karpenter/v1"},
		{from: "scheduling", to: "apis/aws/v1", refused: true},
		{from: "scheduling", to: "simulation", refused: true},
		{from: "cloudprovider", to: "cloudprovider/aws", refused: true},
		{from: "cloudprovider", to: "simulation", refused: true},
		{from: "simulation/solver", to: "cloudprovider"},
		{from: "simulation", to: "plugin", refused: true},
		{from: "controller/nodepool", to: "apis/kwok/v1alpha1", refused: true},
		{from: "controller/nodepool", to: "cloudprovider/aws/provider", refused: true},
		{from: "controller/nodeclaim", to: "plugin", refused: true},
		{from: "plugin/planner", to: "controller/state", refused: true},
		{from: "plugin/planner", to: "simulation/solver"},
		{from: "apis/karpenter/v1", to: "scheduling", refused: true},
		{from: "apis/kwok/v1alpha1", to: "apis/aws/v1", refused: true},
		{from: "apis", to: "apis/aws/v1"},
		{from: "cloudprovider/aws/controllers/nodeclass", to: "controller/conditions"},
		{from: "cloudprovider/aws/provider", to: "controller/state", refused: true},
		{from: "cloudprovider/aws/provider", to: "cloudprovider/kwok", refused: true},
		{from: "cloudprovider/aws/provider", to: "plugin", refused: true},
		{from: "cloudprovider/aws/provider", to: "internal/awsemulator", inTest: true},
		{from: "cloudprovider/aws/provider", to: "internal/awsemulator", refused: true},
		{from: "cloudprovider/kwok/catalog", to: "apis/aws/v1"},
		{from: "internal/localcluster", to: "cmd/joinery-controller", refused: true},
		{from: "cmd/joinery-controller", to: "cloudprovider/aws"},
		{from: "cmd/joinery-controller", to: "app"},
		{from: "app/internal/controller", to: "cloudprovider/aws"},
		{from: "app/internal/controller", to: "controller/disruption"},
		{from: "app", to: "cmd/joinery", refused: true},
		{from: "e2e/outoftree/cmd/joinery-scheduler", to: "app"},
		{from: "controller/disruption", to: "app", refused: true},
		{from: "cli/whatif", to: "app", refused: true},
		{from: "cloudprovider/aws", to: "app", refused: true},
		{from: "e2e/aws", to: "internal/awsemulator"},
		{from: "controller/nodeclaim/drift", to: "cloudprovider/kwok", inTest: true},
		{from: "controller/nodeclaim/drift", to: "cloudprovider/kwok", refused: true},
		{from: "controller/nodeclaim/drift", to: "cloudprovider/aws/provider", inTest: true, refused: true},
		{from: "controller/nodeclaim/internal/fixtures", to: "cloudprovider/kwok"},
		{from: "plugin/integration", to: "internal/testcluster"},
		{from: "plugin", to: "internal/localcluster", inTest: true},
		{from: "plugin", to: "internal/localcluster", refused: true},
		{from: "simulation/solver", to: "controller/state", inTest: true, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.from+"→"+tt.to, func(t *testing.T) {
			rule := check(tt.from, tt.to, tt.inTest)
			if (rule != "") != tt.refused {
				t.Errorf("check(%q, %q, %v) = %q, want refused=%v", tt.from, tt.to, tt.inTest, rule, tt.refused)
			}
		})
	}
}
