package chart_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"

	"github.com/joinery-dev/joinery/internal/chart"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/simulation"
)

// rendered is a rendering decoded into objects by kind and name.
type rendered map[string]*unstructured.Unstructured

func (r rendered) get(t *testing.T, kind, name string, into any) {
	t.Helper()
	obj, ok := r[kind+"/"+name]
	if !ok {
		t.Fatalf("no %s %s among %v", kind, name, slices.Sorted(func(yield func(string) bool) {
			for k := range r {
				if !yield(k) {
					return
				}
			}
		}))
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
}

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return chart.Dir(root)
}

func render(t *testing.T, values map[string]any) rendered {
	t.Helper()
	files, err := chart.Render(chartDir(t), chart.Namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := localcluster.DecodeManifests([]byte(chart.Join(files)))
	if err != nil {
		t.Fatal(err)
	}
	out := rendered{}
	for _, obj := range objs {
		key := obj.GetKind() + "/" + obj.GetName()
		if _, dup := out[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		out[key] = obj
	}
	return out
}

func readValues(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(t), "ci", name))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	return values
}

// TestRenderDefaults checks the defaults the issue asks for: two replicas of each binary kept
// apart and off joinery's own nodes, a PDB of maxUnavailable 1 each, restricted pod security,
// the scheduler as the secondary profile joinery, and least-privilege roles.
func TestRenderDefaults(t *testing.T) {
	r := render(t, nil)
	for _, name := range []string{"joinery-scheduler", "joinery-controller"} {
		t.Run(name, func(t *testing.T) {
			var d appsv1.Deployment
			r.get(t, "Deployment", name, &d)
			if *d.Spec.Replicas != 2 {
				t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
			}
			pod := d.Spec.Template.Spec
			if pod.ServiceAccountName != name {
				t.Errorf("serviceAccountName %q, want %q", pod.ServiceAccountName, name)
			}
			checkAffinity(t, &d)
			checkRestricted(t, &pod)
			var pdb policyv1.PodDisruptionBudget
			r.get(t, "PodDisruptionBudget", name, &pdb)
			if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
				t.Errorf("PDB maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
			}
			if !matches(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
				t.Errorf("PDB selector %v does not select the pods %v", pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
			}
		})
	}
	for _, kind := range []string{"Namespace", "ServiceMonitor"} {
		for key := range r {
			if strings.HasPrefix(key, kind+"/") {
				t.Errorf("defaults render %s", key)
			}
		}
	}
	config := schedulerConfig(t, r, "joinery-scheduler-config")
	if !strings.Contains(config, "- schedulerName: joinery\n") || strings.Contains(config, "- schedulerName: default-scheduler") {
		t.Errorf("the scheduler is not only the secondary profile joinery:\n%s", config)
	}
	// Not kube-scheduler's 50/100: a scale-up's status patches run inside its scheduling loop.
	if !strings.Contains(config, "clientConnection:\n  qps: 200\n  burst: 300\n") {
		t.Errorf("the scheduler's client is not 200/300:\n%s", config)
	}
	var controller appsv1.Deployment
	r.get(t, "Deployment", "joinery-controller", &controller)
	args := controller.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--metrics-secure=true") || !slices.Contains(args, "--cloud-provider=aws") {
		t.Errorf("controller args %v: want secure metrics and the aws provider", args)
	}
}

// TestRBACLeastPrivilege pins what each binary may and may not do, as the chart renders it
// for each cloud provider.
func TestRBACLeastPrivilege(t *testing.T) {
	tests := []struct {
		provider string
		role     string
		group    string
		resource string
		verb     string
		want     bool
	}{
		{"aws", "joinery-scheduler", "karpenter.sh", "nodeclaims", "create", true},
		{"aws", "joinery-scheduler", "karpenter.sh", "nodeclaims", "patch", true},
		{"aws", "joinery-scheduler", "karpenter.sh", "nodeclaims", "delete", false},
		{"aws", "joinery-scheduler", "karpenter.sh", "nodepools", "patch", false},
		{"aws", "joinery-scheduler", "", "nodes", "create", false},
		{"aws", "joinery-scheduler", "", "configmaps", "get", false},
		{"aws", "joinery-scheduler", "apps", "daemonsets", "list", true},
		{"aws", "joinery-controller", "karpenter.sh", "nodeclaims", "delete", true},
		{"aws", "joinery-controller", "karpenter.sh", "nodepools", "create", false},
		{"aws", "joinery-controller", "karpenter.sh", "nodepools", "delete", false},
		{"aws", "joinery-controller", "", "nodes", "create", false},
		{"aws", "joinery-controller", "", "nodes", "delete", true},
		{"aws", "joinery-controller", "", "configmaps", "get", false},
		{"aws", "joinery-controller", "", "secrets", "get", false},
		{"aws", "joinery-controller", "karpenter.k8s.aws", "ec2nodeclasses", "patch", true},
		{"kwok", "joinery-controller", "", "nodes", "create", true},
		{"kwok", "joinery-controller", "karpenter.k8s.aws", "ec2nodeclasses", "patch", false},
	}
	byProvider := map[string]rendered{}
	for _, tt := range tests {
		r, ok := byProvider[tt.provider]
		if !ok {
			r = render(t, map[string]any{"cloudProvider": tt.provider})
			byProvider[tt.provider] = r
		}
		var role rbacv1.ClusterRole
		r.get(t, "ClusterRole", tt.role, &role)
		if got := allows(role.Rules, tt.group, tt.resource, tt.verb); got != tt.want {
			t.Errorf("%s: ClusterRole %s allows %s %s.%s: %t, want %t", tt.provider, tt.role, tt.verb, tt.resource, tt.group, got, tt.want)
		}
	}
	// ConfigMaps only in the controller's namespace, and the scheduler only reads the one record.
	r := byProvider["aws"]
	var controllerRole, schedulerRole rbacv1.Role
	r.get(t, "Role", "joinery-controller", &controllerRole)
	r.get(t, "Role", "joinery-scheduler", &schedulerRole)
	if controllerRole.Namespace != chart.Namespace || !allows(controllerRole.Rules, "", "configmaps", "patch") {
		t.Errorf("the controller cannot keep its ConfigMaps in %s: %+v", chart.Namespace, controllerRole)
	}
	if allows(schedulerRole.Rules, "", "configmaps", "get") {
		t.Error("the scheduler may read every ConfigMap of the namespace, not only joinery-unavailable-offerings")
	}
}

func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, rule := range rules {
		if len(rule.ResourceNames) > 0 {
			continue // a rule for named objects allows no verb on the kind as a whole
		}
		if slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) &&
			(slices.Contains(rule.Verbs, verb) || slices.Contains(rule.Verbs, "*")) {
			return true
		}
	}
	return false
}

// TestRenderNonDefaultValues renders ci/nondefault-values.yaml and checks each value lands.
func TestRenderNonDefaultValues(t *testing.T) {
	r := render(t, readValues(t, "nondefault-values.yaml"))
	var ns corev1.Namespace
	r.get(t, "Namespace", chart.Namespace, &ns)
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace labels %v: want Pod Security enforce=restricted", ns.Labels)
	}
	var sa corev1.ServiceAccount
	r.get(t, "ServiceAccount", "acme-controller", &sa)
	if sa.Annotations["eks.amazonaws.com/role-arn"] == "" || sa.Labels["team"] != "platform" {
		t.Errorf("ServiceAccount metadata %+v: want the IRSA annotation and additionalLabels", sa.ObjectMeta)
	}
	var controller, scheduler appsv1.Deployment
	r.get(t, "Deployment", "acme-controller", &controller)
	r.get(t, "Deployment", "acme-scheduler", &scheduler)
	if *controller.Spec.Replicas != 3 || *scheduler.Spec.Replicas != 3 {
		t.Errorf("replicas %d and %d, want 3", *controller.Spec.Replicas, *scheduler.Spec.Replicas)
	}
	c := controller.Spec.Template.Spec.Containers[0]
	if !strings.HasSuffix(c.Image, "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") {
		t.Errorf("controller image %s: want the digest", c.Image)
	}
	if c.Resources.Requests.Cpu().String() != "1" || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("controller resources %+v", c.Resources)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	for name, want := range map[string]string{
		"CLUSTER_NAME": "prod", "AWS_REGION": "eu-west-1", "INTERRUPTION_QUEUE": "prod-interruptions", "LOG_LEVEL": "debug",
		"FEATURE_GATES":    "CapacityBuffer=false,NodeOverlay=false,NodeRepair=true,ReservedCapacity=true,SpotToSpotConsolidation=true,StaticCapacity=false",
		"LOG_OUTPUT_PATHS": "stdout,/var/log/joinery/joinery.log", "LOG_ERROR_OUTPUT_PATHS": "/var/log/joinery/errors.log",
		"ENABLE_PROFILING": "true", "AMI_REFRESH_INTERVAL": "10m", "SUBNET_REFRESH_INTERVAL": "2m", "DISABLE_DRY_RUN": "true",
		"ENABLE_ZONAL_SHIFT": "true", "EKS_CONTROL_PLANE": "true",
	} {
		if env[name] != want {
			t.Errorf("controller env %s=%q, want %q", name, env[name], want)
		}
	}
	schedulerEnv := map[string]string{}
	for _, e := range scheduler.Spec.Template.Spec.Containers[0].Env {
		schedulerEnv[e.Name] = e.Value
	}
	// The scheduler follows zonal shifts too, so it needs the cluster's name.
	for name, want := range map[string]string{"LOG_OUTPUT_PATHS": "stdout,/var/log/joinery/joinery.log", "ENABLE_PROFILING": "true",
		"CLUSTER_NAME": "prod", "ENABLE_ZONAL_SHIFT": "true"} {
		if schedulerEnv[name] != want {
			t.Errorf("scheduler env %s=%q, want %q", name, schedulerEnv[name], want)
		}
	}
	pod := controller.Spec.Template.Spec
	if len(pod.TopologySpreadConstraints) != 0 || len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "node-role.kubernetes.io/control-plane" {
		t.Errorf("placement: spread %v, tolerations %v", pod.TopologySpreadConstraints, pod.Tolerations)
	}
	// Helm merges maps into the defaults and replaces lists: the node affinity is the
	// values', the replicas' anti-affinity stays.
	terms := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || terms[0].MatchExpressions[0].Key != "node-role.kubernetes.io/control-plane" {
		t.Errorf("node affinity %+v, want the values' control-plane term", terms)
	}
	if pod.Affinity.PodAntiAffinity == nil {
		t.Errorf("affinity %+v lost the default anti-affinity", pod.Affinity)
	}
	var pdb policyv1.PodDisruptionBudget
	r.get(t, "PodDisruptionBudget", "acme-scheduler", &pdb)
	if pdb.Spec.MaxUnavailable.IntValue() != 2 {
		t.Errorf("PDB maxUnavailable %v, want 2", pdb.Spec.MaxUnavailable)
	}
	config := schedulerConfig(t, r, "acme-scheduler-config")
	for _, want := range []string{"- schedulerName: acme\n", "- schedulerName: default-scheduler\n", "batchMaxDuration: 15s", "resourceName: acme-scheduler"} {
		if !strings.Contains(config, want) {
			t.Errorf("scheduler config lacks %q:\n%s", want, config)
		}
	}
	for _, name := range []string{"acme-scheduler", "acme-controller"} {
		sm, ok := r["ServiceMonitor/"+name]
		if !ok {
			t.Errorf("no ServiceMonitor %s", name)
			continue
		}
		if sm.GetLabels()["release"] != "prometheus" {
			t.Errorf("ServiceMonitor %s labels %v", name, sm.GetLabels())
		}
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(endpoints) != 1 || endpoints[0].(map[string]any)["interval"] != "30s" {
			t.Errorf("ServiceMonitor %s endpoints %v", name, endpoints)
		}
	}
}

// TestSchemaRejectsInvalidValues: values.schema.json stops a typo or a wrong type before
// anything reaches the cluster, naming the value.
func TestSchemaRejectsInvalidValues(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"unknown log level", map[string]any{"logLevel": "verbose"}, "logLevel"},
		{"replicas as a string", map[string]any{"replicas": "two"}, "replicas"},
		{"unknown top-level value", map[string]any{"replica": 2}, "replica"},
		{"unknown feature gate", map[string]any{"settings": map[string]any{"featureGates": map[string]any{"drift": true}}}, "drift"},
		{"bad duration", map[string]any{"settings": map[string]any{"batchMaxDuration": "10 seconds"}}, "batchMaxDuration"},
		{"bad refresh interval", map[string]any{"settings": map[string]any{"amiRefreshInterval": "hourly"}}, "amiRefreshInterval"},
		{"log paths as a string", map[string]any{"logOutputPaths": "stdout,stderr"}, "logOutputPaths"},
		{"a comma inside a log path", map[string]any{"logErrorOutputPaths": []any{"stdout,stderr"}}, "logErrorOutputPaths"},
		{"profiling as a string", map[string]any{"settings": map[string]any{"enableProfiling": "yes"}}, "enableProfiling"},
		{"unknown cloud provider", map[string]any{"cloudProvider": "gcp"}, "cloudProvider"},
		{"zero client qps", map[string]any{"scheduler": map[string]any{"kubeClient": map[string]any{"qps": 0}}}, "qps"},
		{"bad digest", map[string]any{"controller": map[string]any{"image": map[string]any{"repository": "x", "digest": "latest"}}}, "digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chart.Render(chartDir(t), chart.Namespace, tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Render: %v, want a schema error naming %q", err, tt.want)
			}
		})
	}
}

// TestDeployManifestsAreTheChart: manifests/deploy is the chart rendered with DeployValues,
// file by file (make generate writes it; make verify fails when it is stale).
func TestDeployManifestsAreTheChart(t *testing.T) {
	files, err := chart.Render(chartDir(t), chart.Namespace, chart.DeployValues())
	if err != nil {
		t.Fatal(err)
	}
	deploy := filepath.Join(filepath.Dir(filepath.Dir(chartDir(t))), "manifests", "deploy")
	onDisk, err := filepath.Glob(filepath.Join(deploy, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := sets.New[string]("kustomization.yaml")
	for _, f := range files {
		want.Insert(f.Name)
		data, err := os.ReadFile(filepath.Join(deploy, f.Name))
		if err != nil {
			t.Errorf("manifests/deploy lacks %s (run make generate): %v", f.Name, err)
			continue
		}
		if !strings.HasSuffix(string(data), f.Manifest) {
			t.Errorf("manifests/deploy/%s is not the chart's rendering (run make generate)", f.Name)
		}
	}
	for _, path := range onDisk {
		if !want.Has(filepath.Base(path)) {
			t.Errorf("manifests/deploy/%s is not rendered from the chart", filepath.Base(path))
		}
	}
}

func schedulerConfig(t *testing.T, r rendered, name string) string {
	t.Helper()
	var cm corev1.ConfigMap
	r.get(t, "ConfigMap", name, &cm)
	return cm.Data["config.yaml"]
}

// checkAffinity: off the nodes joinery manages, and replicas on different nodes.
func checkAffinity(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	affinity := d.Spec.Template.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Fatalf("no required node affinity: %+v", affinity)
	}
	var offManaged bool
	for _, term := range affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, expr := range term.MatchExpressions {
			offManaged = offManaged || (expr.Key == "karpenter.sh/nodepool" && expr.Operator == corev1.NodeSelectorOpDoesNotExist)
		}
	}
	if !offManaged {
		t.Error("the node affinity does not keep the pods off nodes with karpenter.sh/nodepool")
	}
	if affinity.PodAntiAffinity == nil || len(affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("no required pod anti-affinity: %+v", affinity.PodAntiAffinity)
	}
	term := affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil || !matches(term.LabelSelector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("anti-affinity %+v does not keep the replicas of %s on different nodes", term, d.Name)
	}
	for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
		if c.LabelSelector == nil || !matches(c.LabelSelector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("topology spread %+v does not select %s's pods", c, d.Name)
		}
	}
}

// checkRestricted: what the restricted Pod Security Standard requires.
func checkRestricted(t *testing.T, pod *corev1.PodSpec) {
	t.Helper()
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want runAsNonRoot and the RuntimeDefault seccomp profile", sc)
	}
	for _, c := range pod.Containers {
		csc := c.SecurityContext
		if csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
			csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("container %s security context %+v: want no privilege escalation and every capability dropped", c.Name, csc)
		}
	}
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// TestControllerSimulatesWithTheSchedulersProfile: joinery-controller's disruption loads the
// profile joinery-scheduler provisions with from the same ConfigMap, as simulation.LoadProfile
// reads it, for the default profile name and another.
func TestControllerSimulatesWithTheSchedulersProfile(t *testing.T) {
	for _, tt := range []struct {
		values             map[string]any
		deployment, config string
		profile            string
	}{
		{nil, "joinery-controller", "joinery-scheduler-config", "joinery"},
		{readValues(t, "nondefault-values.yaml"), "acme-controller", "acme-scheduler-config", "acme"},
	} {
		r := render(t, tt.values)
		var d appsv1.Deployment
		r.get(t, "Deployment", tt.deployment, &d)
		pod := d.Spec.Template.Spec
		args := pod.Containers[0].Args
		if !slices.Contains(args, "--scheduler-config=/etc/joinery/config.yaml") || !slices.Contains(args, "--scheduler-name="+tt.profile) {
			t.Errorf("%s args %v: want the scheduler's configuration and profile %s", tt.deployment, args, tt.profile)
		}
		if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != tt.config {
			t.Errorf("%s volumes %+v: want ConfigMap %s", tt.deployment, pod.Volumes, tt.config)
		}
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(schedulerConfig(t, r, tt.config)), 0o600); err != nil {
			t.Fatal(err)
		}
		profile, err := simulation.LoadProfile(path, tt.profile)
		if err != nil {
			t.Fatalf("%s: %v", tt.config, err)
		}
		if profile.SchedulerName != tt.profile {
			t.Errorf("loaded profile %s, want %s", profile.SchedulerName, tt.profile)
		}
	}
}
