package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// joineryController runs bin/joinery-controller with leader election on, as in a real
// deployment, the cluster's cloud provider (kwok: NodeClaims become kwok nodes; aws: instances
// of the emulator), and its metrics and probes on free loopback ports. It is ready once
// /readyz is.
func (c *Cluster) joineryController() component {
	return component{
		env:  c.awsEnv(),
		name: string(JoineryController),
		configure: func() ([]string, error) {
			metrics, err := freePort()
			if err != nil {
				return nil, err
			}
			probe, err := freePort()
			if err != nil {
				return nil, err
			}
			c.controllerMetricsPort, c.controllerProbePort = metrics, probe
			args := []string{
				"--kubeconfig=" + c.kubeconfigOf(JoineryController),
				"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics),
				"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probe),
				"--leader-elect=true",
				"--leader-election-namespace=" + c.ControllerNamespace(),
			}
			// With out-of-tree plugins, disruption simulates with the scheduler's own profile,
			// as the chart's --scheduler-config has it do; the scheduler's profile is `joinery`.
			if len(c.opts.SchedulerPlugins) > 0 && slices.Contains(c.opts.Components, JoineryScheduler) {
				args = append(args, "--scheduler-config="+c.schedulerConfigPath(), "--scheduler-name="+JoinerySchedulerName)
			}
			return append(args, c.cloudProviderArgs(true)...), nil
		},
		ready: func(ctx context.Context) error {
			return probeOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", c.controllerProbePort))
		},
		ports: func() []int { return []int{c.controllerMetricsPort, c.controllerProbePort} },
	}
}
