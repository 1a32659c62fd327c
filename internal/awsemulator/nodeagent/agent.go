// Package nodeagent closes the emulator's loop: it plays the kubelet and the cloud node-lifecycle
// controller for the instances an awsemulator.Server launches. A running instance whose user data
// bootstraps into this cluster becomes a Node, registered the way its kubelet would register it
// (labels, taints, max pods and reservations read back from the generated user data); a Node
// whose instance is gone is deleted. A bug in joinery's user data therefore shows up as a node
// that registers wrongly, or never, as it would in production.
//
// Nodes carry kwok's annotation, so kwok (in the local cluster) reports them Ready and runs
// their pods.
package nodeagent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// KwokAnnotation marks Nodes that kwok manages.
const KwokAnnotation = "kwok.x-k8s.io/node"

// Options configure an Agent.
type Options struct {
	// ClusterName is the cluster whose instances register here: user data naming another
	// cluster is ignored, as that cluster's API server would be the one contacted.
	ClusterName string
	// Interval is how often instances and Nodes are compared; 500 ms if zero.
	Interval time.Duration
	// Logger receives one line per registration, deletion and refused bootstrap.
	Logger logr.Logger
}

// Agent registers the emulator's instances as Nodes and deletes Nodes of terminated instances.
type Agent struct {
	server *awsemulator.Server
	client kubernetes.Interface
	opts   Options
	// refused remembers instances whose user data could not be read, so each is logged once.
	refused map[string]bool
}

// New returns an Agent for server's instances and the cluster client reaches.
func New(server *awsemulator.Server, client kubernetes.Interface, opts Options) *Agent {
	if opts.Interval == 0 {
		opts.Interval = 500 * time.Millisecond
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	return &Agent{server: server, client: client, opts: opts, refused: map[string]bool{}}
}

// Run syncs until ctx ends. Errors of one pass are logged and retried at the next.
func (a *Agent) Run(ctx context.Context) {
	ticker := time.NewTicker(a.opts.Interval)
	defer ticker.Stop()
	for {
		if err := a.Sync(ctx); err != nil && ctx.Err() == nil {
			a.opts.Logger.Error(err, "syncing emulated instances with Nodes")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Sync makes one pass: registers Nodes for running instances that have none, and deletes Nodes
// whose instance is terminated, shutting down or unknown.
func (a *Agent) Sync(ctx context.Context) error {
	nodes, err := a.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	nodeByProviderID := map[string]*corev1.Node{}
	for i := range nodes.Items {
		if id := nodes.Items[i].Spec.ProviderID; strings.HasPrefix(id, "aws:///") {
			nodeByProviderID[id] = &nodes.Items[i]
		}
	}
	live := map[string]bool{}
	for _, inst := range a.server.Instances() {
		id := ProviderID(inst)
		if inst.State != awsemulator.InstanceStateRunning {
			continue
		}
		live[id] = true
		if nodeByProviderID[id] != nil || a.refused[inst.ID] {
			continue
		}
		node, err := a.nodeFor(inst)
		if err != nil {
			a.refused[inst.ID] = true
			a.opts.Logger.Info("instance cannot join the cluster; no Node is registered", "instance", inst.ID, "reason", err.Error())
			continue
		}
		if node == nil {
			continue // another cluster's instance
		}
		if _, err := a.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering node %s for instance %s: %w", node.Name, inst.ID, err)
		}
		a.opts.Logger.Info("registered node", "node", node.Name, "instance", inst.ID, "instanceType", inst.InstanceType, "zone", inst.Zone)
	}
	for id, node := range nodeByProviderID {
		if live[id] || node.DeletionTimestamp != nil {
			continue
		}
		// The cloud node-lifecycle controller deletes Nodes whose instance is gone.
		if err := a.client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s of a terminated instance: %w", node.Name, err)
		}
		a.opts.Logger.Info("deleted node of a terminated instance", "node", node.Name, "providerID", id)
	}
	return nil
}

// ProviderID is the providerID the AWS cloud provider gives an instance's Node.
func ProviderID(inst awsemulator.Instance) string {
	return fmt.Sprintf("aws:///%s/%s", inst.Zone, inst.ID)
}
