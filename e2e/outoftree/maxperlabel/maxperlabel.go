// Package maxperlabel is a sample out-of-tree scheduler plugin, kept in the e2e tree to show
// that joinery simulates a user's own plugins as kube-scheduler runs them: its Filter lets at
// most MaxPerNode pods carrying the label LabelKey (any value) onto one node. It is built into
// test binaries of joinery-scheduler and joinery-controller (../cmd) with app.WithPlugin.
package maxperlabel

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Name is the plugin's name in a scheduler profile.
const Name = "MaxPerLabel"

// Args are the plugin's pluginConfig args.
type Args struct {
	// LabelKey selects the pods counted: those that carry it, whatever its value.
	LabelKey string `json:"labelKey"`
	// MaxPerNode is how many such pods one node may run; at least 1.
	MaxPerNode int `json:"maxPerNode"`
}

// Plugin is the Filter.
type Plugin struct {
	args Args
}

var (
	_ fwk.FilterPlugin      = (*Plugin)(nil)
	_ fwk.EnqueueExtensions = (*Plugin)(nil)
)

// New is the plugin's factory (a frameworkruntime.PluginFactory).
func New(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	var args Args
	if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	if args.LabelKey == "" {
		return nil, errors.New(Name + " args: labelKey is required")
	}
	if args.MaxPerNode < 1 {
		return nil, fmt.Errorf("%s args: maxPerNode is %d, want at least 1", Name, args.MaxPerNode)
	}
	return &Plugin{args: args}, nil
}

// Name is the plugin's name.
func (p *Plugin) Name() string { return Name }

// Filter refuses a labelled pod a node that already runs MaxPerNode labelled pods.
func (p *Plugin) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if _, ok := pod.Labels[p.args.LabelKey]; !ok {
		return nil
	}
	n := 0
	for _, pi := range nodeInfo.GetPods() {
		if _, ok := pi.GetPod().Labels[p.args.LabelKey]; ok {
			n++
		}
	}
	if n >= p.args.MaxPerNode {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("node runs %d pods labelled %s, the most %s allows", n, p.args.LabelKey, Name))
	}
	return nil
}

// EventsToRegister: a refused pod may fit once a labelled pod leaves a node, or a node is
// added.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}},
	}, nil
}
