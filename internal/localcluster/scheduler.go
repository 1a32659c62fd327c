package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"text/template"
)

// JoinerySchedulerName is the profile pods name in schedulerName to be scheduled by
// joinery-scheduler while another scheduler serves default-scheduler.
const JoinerySchedulerName = "joinery"

// schedulerConfig is joinery-scheduler's KubeSchedulerConfiguration on the local cluster.
var schedulerConfig = template.Must(template.New("scheduler").Parse(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {{ printf "%q" .Kubeconfig }}
  # The chart's scheduler.kubeClient: kube-scheduler's 50/100 throttles the status patches of a
  # scale-up's failed attempts, which run inside the scheduling loop.
  qps: 200
  burst: 300
leaderElection:
  leaderElect: false
profiles:
{{- range .Profiles }}
- schedulerName: {{ . }}
{{- if or $.Plugins (not $.Plain) }}
  plugins:
{{- if $.Plugins }}
    # Out-of-tree plugins (Options.SchedulerPlugins), at every extension point they implement.
    multiPoint:
      enabled:
{{- range $.Plugins }}
      - name: {{ .Name }}
{{- end }}
{{- end }}
{{- if not $.Plain }}
    # joinery's Provisioner runs before DefaultPreemption: preemption may end the PostFilter
    # chain with UnschedulableAndUnresolvable, and the Provisioner, which always returns
    # Unschedulable, must see every pod first. Disabling DefaultPreemption here and enabling
    # it after the Provisioner is what orders it after a plugin enabled at this point.
    postFilter:
      disabled:
      - name: DefaultPreemption
      enabled:
      - name: JoineryProvisioner
      - name: DefaultPreemption
    # PreFilter holds a pod that waits for a NodeClaim to that NodeClaim's node, so pods land
    # where they were planned instead of on capacity bought for others.
    preFilter:
      enabled:
      - name: JoineryProvisioner
    # Filter keeps a pinned pod off its nominated node when that is not the pinned one
    # (kube-scheduler tries the nominated node regardless of PreFilter).
    filter:
      enabled:
      - name: JoineryProvisioner
    # Reserve/Unreserve keep the plan exact when a pod lands on existing capacity after all.
    reserve:
      enabled:
      - name: JoineryProvisioner
{{- end }}
{{- end }}
{{- if $.Plugins }}
  pluginConfig:
{{- range $.Plugins }}
  - name: {{ .Name }}
    args: {{ .Args }}
{{- end }}
{{- end }}
{{- end }}
`))

// SchedulerPlugin is an out-of-tree scheduler plugin of the local cluster's profiles.
type SchedulerPlugin struct {
	Name string
	// Args are its pluginConfig args; nil configures none.
	Args map[string]any
}

// SchedulerConfig renders the KubeSchedulerConfiguration joinery-scheduler runs with:
// profile `joinery`, plus `default-scheduler` unless secondary, each with joinery's
// Provisioner and plugins enabled and configured.
func SchedulerConfig(kubeconfig string, secondary bool, plugins ...SchedulerPlugin) ([]byte, error) {
	return renderSchedulerConfig(kubeconfig, secondary, false, plugins)
}

// PlainSchedulerConfig is SchedulerConfig without joinery's Provisioner (Options.PlainScheduler).
func PlainSchedulerConfig(kubeconfig string, secondary bool, plugins ...SchedulerPlugin) ([]byte, error) {
	return renderSchedulerConfig(kubeconfig, secondary, true, plugins)
}

func renderSchedulerConfig(kubeconfig string, secondary, plain bool, plugins []SchedulerPlugin) ([]byte, error) {
	profiles := []string{JoinerySchedulerName}
	if !secondary {
		profiles = append(profiles, "default-scheduler")
	}
	type rendered struct{ Name, Args string }
	var rendering []rendered
	for _, p := range plugins {
		args, err := json.Marshal(p.Args) // JSON is YAML: one line, no indentation to get right
		if err != nil {
			return nil, fmt.Errorf("scheduler plugin %s's args: %w", p.Name, err)
		}
		rendering = append(rendering, rendered{Name: p.Name, Args: string(args)})
	}
	var out bytes.Buffer
	err := schedulerConfig.Execute(&out, struct {
		Kubeconfig string
		Profiles   []string
		Plugins    []rendered
		Plain      bool
	}{kubeconfig, profiles, rendering, plain})
	if err != nil {
		return nil, fmt.Errorf("render scheduler config: %w", err)
	}
	return out.Bytes(), nil
}

// schedulerConfigPath is where the cluster writes joinery-scheduler's configuration.
func (c *Cluster) schedulerConfigPath() string {
	return filepath.Join(c.opts.Dir, string(JoineryScheduler), "config.yaml")
}

// joineryScheduler runs bin/joinery-scheduler from a config file the cluster writes, serving
// /healthz on a free loopback port, with leader election off: it is the only instance.
func (c *Cluster) joineryScheduler() (component, error) {
	c.schedulerDir = filepath.Join(c.opts.Dir, string(JoineryScheduler))
	if err := os.MkdirAll(c.schedulerDir, 0o755); err != nil {
		return component{}, fmt.Errorf("create scheduler dir: %w", err)
	}
	kubeconfig := c.kubeconfigOf(JoineryScheduler)
	render := SchedulerConfig
	if c.opts.PlainScheduler {
		render = PlainSchedulerConfig
	}
	config, err := render(kubeconfig, c.opts.SecondaryScheduler, c.opts.SchedulerPlugins...)
	if err != nil {
		return component{}, err
	}
	configPath := c.schedulerConfigPath()
	if err := os.WriteFile(configPath, config, 0o644); err != nil {
		return component{}, fmt.Errorf("write scheduler config: %w", err)
	}
	// Where joinery-controller keeps the unavailable-offerings record.
	env := append(c.schedulerAWSEnv(), "JOINERY_CONTROLLER_NAMESPACE="+c.ControllerNamespace())
	return component{
		env:  env,
		name: string(JoineryScheduler),
		configure: func() ([]string, error) {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			readiness, err := freePort()
			if err != nil {
				return nil, err
			}
			c.schedulerPort, c.schedulerReadinessPort = port, readiness
			args := []string{
				"--config=" + configPath,
				"--authentication-kubeconfig=" + kubeconfig,
				"--authorization-kubeconfig=" + kubeconfig,
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(port),
				"--cert-dir=" + c.schedulerDir,
				"--logging-format=json",
				"--readiness-bind-address=127.0.0.1:" + strconv.Itoa(readiness),
			}
			return append(args, c.cloudProviderArgs(false)...), nil
		},
		// Healthy, and ready as the deploy manifests' probe sees it: every profile's
		// Provisioner has synced its caches (without one, healthy is all there is).
		ready: func(ctx context.Context) error {
			if err := probeOK(ctx, loopbackHTTPS, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.schedulerPort)); err != nil || c.opts.PlainScheduler {
				return err
			}
			return probeOK(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/readyz", c.schedulerReadinessPort))
		},
		ports: func() []int { return []int{c.schedulerPort, c.schedulerReadinessPort} },
	}, nil
}
