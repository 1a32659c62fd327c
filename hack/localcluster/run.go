package main

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

//go:embed samples/*.yaml
var samples embed.FS

const (
	refreshInterval = 2 * time.Second
	// settleTimeout is how long the sample pods get to run before the workload is scaled down
	// anyway: until provisioning exists they stay pending.
	settleTimeout = 3 * time.Minute
	// sampleSelector picks the sample workload's objects.
	sampleSelector = "app.kubernetes.io/part-of=joinery-sample"
)

// scaledDownReplicas is what each sample Deployment is scaled to once its pods settled: the
// nodes left empty are removed (emptiness), those left underutilized are consolidated.
var scaledDownReplicas = map[string]int{"sample-small": 3, "sample-medium": 1, "sample-large": 0}

var nodeClaimsResource = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}

// run starts the cluster in the foreground, applies the samples, shows the live view every
// refreshInterval and stops everything on Ctrl-C.
func run(p paths, build bool, cloudProvider string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if build {
		if err := ensureBinaries(ctx, p); err != nil {
			return err
		}
	}
	if s, err := readState(p.statePath()); err == nil && alive(s.SupervisorPID) {
		return errors.New("a local cluster started by `make cluster` is running; stop it with `make cluster-down` first")
	}
	opts, err := p.options(cloudProvider)
	if err != nil {
		return err
	}
	say("starting the local cluster with the %s cloud provider: etcd, kube-apiserver, %s", cloudProvider, joinComponents(opts.Components))
	opts.Logger = progressLogger()
	begin := time.Now()
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	c, err := localcluster.Start(startCtx, opts)
	cancel()
	if err != nil {
		return fmt.Errorf("start the local cluster: %w", err)
	}
	defer func() {
		say("stopping the local cluster")
		if err := c.Stop(); err != nil {
			say("stop: %v", err)
			return
		}
		say("stopped; every process ended; logs are in %s", p.logsDir)
	}()
	say("local cluster ready in %s", time.Since(begin).Round(100*time.Millisecond))
	say("while it runs: export KUBECONFIG=%s", c.KubeconfigPath())
	if url := c.AWSEmulatorURL(); url != "" {
		say("AWS emulator at %s (admin API under %s)", url, awsemulator.AdminPathPrefix)
	}

	note, err := applySamples(ctx, c)
	if err != nil {
		return err
	}
	prices, err := priceBookFor(ctx, c)
	if err != nil {
		return err
	}
	return watch(ctx, p, c, note, prices)
}

func joinComponents(components []localcluster.Component) string {
	names := make([]string, len(components))
	for i, c := range components {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// applySamples applies the node class of the cluster's cloud provider, its NodePool and the
// workload; it returns what the view should say about provisioning.
func applySamples(ctx context.Context, c *localcluster.Cluster) (string, error) {
	applier, err := localcluster.NewApplier(c.RESTConfig())
	if err != nil {
		return "", err
	}
	files := []string{"samples/kwoknodeclass.yaml", "samples/nodepool.yaml", "samples/workload.yaml"}
	note := "joinery provisions kwok nodes for the pending pods"
	if c.CloudProvider() == localcluster.CloudProviderAWS {
		files = []string{"samples/ec2nodeclass.yaml", "samples/nodepool-aws.yaml", "samples/workload.yaml"}
		note = "joinery launches EC2 instances in the AWS emulator for the pending pods; the emulator registers them as nodes"
	}
	for _, name := range files {
		data, err := samples.ReadFile(name)
		if err != nil {
			return "", err
		}
		if err := applier.Apply(ctx, data, false); err != nil {
			return "", fmt.Errorf("apply %s: %w", name, err)
		}
		say("applied %s", name)
	}
	return note, nil
}

// watch refreshes the live view until ctx ends or a component crashes. Once no sample pod is
// pending (or settleTimeout passed), it scales the workload down.
func watch(ctx context.Context, p paths, c *localcluster.Cluster, note string, prices pricer) error {
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	explain := newExplainer(p, c)
	go explain.run(ctx)
	settleBy := time.Now().Add(settleTimeout)
	scaled, scaledNote := false, ""
	tick := time.NewTicker(refreshInterval)
	defer tick.Stop()
	for {
		s, err := collect(ctx, client, dyn)
		if err != nil && ctx.Err() == nil {
			s.note = fmt.Sprintf("cannot read the cluster: %v", err)
		}
		if err == nil && !scaled && (settled(s.pods) || time.Now().After(settleBy)) {
			if err := scaleDown(ctx, client); err != nil {
				return err
			}
			scaled = true
			scaledNote = scaleDownNote(sampleConsolidateAfter(ctx, dyn))
		}
		status := note
		if scaled {
			status += "\n" + scaledNote
		}
		if s.note == "" {
			s.note = status
		}
		s.prices = prices
		names := make([]string, len(s.nodes))
		for i, node := range s.nodes {
			names[i] = node.Name
		}
		explain.setNodes(names)
		s.next = explain.next()
		var screen bytes.Buffer
		screen.WriteString("\033[H\033[2J") // clear the terminal
		fmt.Fprintf(&screen, "joinery local cluster — %s — Ctrl-C stops everything\n\n", time.Now().Format(time.TimeOnly))
		render(&screen, s)
		os.Stdout.Write(screen.Bytes())

		select {
		case <-ctx.Done():
			fmt.Println()
			return nil
		case err := <-c.Crashed():
			return fmt.Errorf("a component crashed: %w", err)
		case <-tick.C:
		}
	}
}

func collect(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface) (snapshot, error) {
	var s snapshot
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sampleSelector})
	if err != nil {
		return s, fmt.Errorf("list pods: %w", err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("list nodes: %w", err)
	}
	claims, err := dyn.Resource(nodeClaimsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("list nodeclaims: %w", err)
	}
	s.pods, s.nodes, s.nodeClaims = pods.Items, nodes.Items, claims.Items
	sortByName(s.pods, func(p corev1.Pod) string { return p.Name })
	sortByName(s.nodes, func(n corev1.Node) string { return n.Name })
	return s, nil
}

// settled reports whether every sample pod runs.
func settled(pods []corev1.Pod) bool {
	if len(pods) == 0 {
		return false
	}
	for _, pod := range pods {
		if pod.Status.Phase != corev1.PodRunning {
			return false
		}
	}
	return true
}

func scaleDown(ctx context.Context, client kubernetes.Interface) error {
	for name, replicas := range scaledDownReplicas {
		patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
		if _, err := client.AppsV1().Deployments(metav1.NamespaceDefault).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("scale %s down: %w", name, err)
		}
	}
	return nil
}

// sampleNodePool is the name of the NodePool the samples apply (either provider's).
const sampleNodePool = "default"

var nodePoolsResource = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}

// sampleConsolidateAfter reads the sample NodePool's spec.disruption.consolidateAfter; "" when
// it cannot be read (the view then names the field instead of its value).
func sampleConsolidateAfter(ctx context.Context, dyn dynamic.Interface) string {
	np, err := dyn.Resource(nodePoolsResource).Get(ctx, sampleNodePool, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	after, _, _ := unstructured.NestedString(np.Object, "spec", "disruption", "consolidateAfter")
	return after
}

// scaleDownNote is what the view says once the workload is scaled down: empty nodes go after
// the NodePool's consolidateAfter (emptiness), and underutilized ones are consolidated when
// the disruption methods find a command for them; with Never, every node stays. What happens
// to each node, and why, is the view's NEXT column (`joinery explain node`).
func scaleDownNote(consolidateAfter string) string {
	switch consolidateAfter {
	case "":
		return "scaled the workload down to 3 small + 1 medium pods: once the NodePool's consolidateAfter has passed, " + consolidates
	case "Never":
		return "scaled the workload down to 3 small + 1 medium pods: every node stays (the NodePool's consolidateAfter is Never)"
	default:
		return "scaled the workload down to 3 small + 1 medium pods: once " + consolidateAfter + " have passed since a node's last pod change (the NodePool's consolidateAfter), " + consolidates
	}
}

// consolidates says what the sample NodePool's WhenEmptyOrUnderutilized policy does. It
// promises no replacement: a spot node is replaced by a cheaper spot node only with the
// SpotToSpotConsolidation feature gate, off by default, and a replacement must be cheaper on
// every offering it may launch with.
const consolidates = "nodes left empty are removed, and an underutilized one is deleted when its pods fit on the other nodes " +
	"or replaced when a cheaper node is allowed (spot by spot only with the SpotToSpotConsolidation gate); " +
	"NEXT says what the next disruption pass does with each node, and why (as `joinery explain node NAME` does)"
