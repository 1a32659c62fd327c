package localcluster

import (
	"bytes"
	"context"
	"fmt"
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
leaderElection:
  leaderElect: false
profiles:
{{- range .Profiles }}
- schedulerName: {{ . }}
  # joinery's Provisioner plugin is enabled here once provisioning exists (it joins the
  # PostFilter extension point of every profile that should create capacity).
{{- end }}
`))

// SchedulerConfig renders the KubeSchedulerConfiguration joinery-scheduler runs with:
// profile `joinery`, plus `default-scheduler` unless secondary.
func SchedulerConfig(kubeconfig string, secondary bool) ([]byte, error) {
	profiles := []string{JoinerySchedulerName}
	if !secondary {
		profiles = append(profiles, "default-scheduler")
	}
	var out bytes.Buffer
	err := schedulerConfig.Execute(&out, struct {
		Kubeconfig string
		Profiles   []string
	}{kubeconfig, profiles})
	if err != nil {
		return nil, fmt.Errorf("render scheduler config: %w", err)
	}
	return out.Bytes(), nil
}

// joineryScheduler runs bin/joinery-scheduler from a config file the cluster writes, serving
// /healthz on a free loopback port, with leader election off: it is the only instance.
func (c *Cluster) joineryScheduler() (component, error) {
	c.schedulerDir = filepath.Join(c.opts.Dir, string(JoineryScheduler))
	if err := os.MkdirAll(c.schedulerDir, 0o755); err != nil {
		return component{}, fmt.Errorf("create scheduler dir: %w", err)
	}
	config, err := SchedulerConfig(c.kubeconfigPath, c.opts.SecondaryScheduler)
	if err != nil {
		return component{}, err
	}
	configPath := filepath.Join(c.schedulerDir, "config.yaml")
	if err := os.WriteFile(configPath, config, 0o644); err != nil {
		return component{}, fmt.Errorf("write scheduler config: %w", err)
	}
	return component{
		name: string(JoineryScheduler),
		configure: func() ([]string, error) {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			c.schedulerPort = port
			return []string{
				"--config=" + configPath,
				"--authentication-kubeconfig=" + c.kubeconfigPath,
				"--authorization-kubeconfig=" + c.kubeconfigPath,
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(port),
				"--cert-dir=" + c.schedulerDir,
				"--logging-format=json",
			}, nil
		},
		ready: func(ctx context.Context) error {
			return probeOK(ctx, loopbackHTTPS, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.schedulerPort))
		},
		ports: func() []int { return []int{c.schedulerPort} },
	}, nil
}
