package localcluster

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// Component names a process the cluster runs beyond etcd and kube-apiserver; the name is
// also its binary's and its log's.
type Component string

const (
	// ControllerManager is kube-controller-manager with the controllers workloads need.
	ControllerManager Component = "kube-controller-manager"
	// Kwok stands in for the kubelets of nodes annotated kwok.x-k8s.io/node=fake.
	Kwok Component = "kwok"
	// JoineryScheduler is joinery's kube-scheduler build.
	JoineryScheduler Component = "joinery-scheduler"
	// JoineryController is joinery's controller manager.
	JoineryController Component = "joinery-controller"
	// AWSEmulator is cmd/awsemulator: the emulated AWS APIs joinery's binaries use with
	// CloudProviderAWS, and the node agent that makes its instances into Nodes.
	AWSEmulator Component = "awsemulator"
)

// AllComponents is the whole system with the kwok provider: what `make run`, `make cluster`
// and the e2e suites start.
var AllComponents = []Component{ControllerManager, Kwok, JoineryScheduler, JoineryController}

// AWSComponents is the whole system with the AWS provider against the emulator; kwok still
// plays the kubelets of the Nodes the emulator's node agent registers.
var AWSComponents = []Component{ControllerManager, Kwok, AWSEmulator, JoineryScheduler, JoineryController}

// knownComponents are every component a cluster can run.
var knownComponents = []Component{ControllerManager, Kwok, AWSEmulator, JoineryScheduler, JoineryController}

// ComponentsFor returns the whole system for a cloud provider (CloudProviderKwok when empty).
func ComponentsFor(cloudProvider string) ([]Component, error) {
	switch cloudProvider {
	case "", CloudProviderKwok:
		return slices.Clone(AllComponents), nil
	case CloudProviderAWS:
		return slices.Clone(AWSComponents), nil
	}
	return nil, fmt.Errorf("unknown cloud provider %q (known: %s, %s)", cloudProvider, CloudProviderKwok, CloudProviderAWS)
}

// isJoinery reports whether the component's binary comes from `make build` rather than
// hack/tools.sh.
func (c Component) isJoinery() bool {
	return c == JoineryScheduler || c == JoineryController || c == AWSEmulator
}

// checkComponentBinaries verifies the binaries of opts.Components, saying which command
// builds a missing one.
func checkComponentBinaries(opts Options) error {
	var errs []error
	switch opts.CloudProvider {
	case "", CloudProviderKwok:
	case CloudProviderAWS:
		if !slices.Contains(opts.Components, AWSEmulator) {
			errs = append(errs, fmt.Errorf("cloud provider %s needs the %s component", CloudProviderAWS, AWSEmulator))
		}
	default:
		errs = append(errs, fmt.Errorf("unknown cloud provider %q (known: %s, %s)", opts.CloudProvider, CloudProviderKwok, CloudProviderAWS))
	}
	for _, comp := range opts.Components {
		if !slices.Contains(knownComponents, comp) {
			errs = append(errs, fmt.Errorf("unknown component %q (known: %v)", comp, knownComponents))
			continue
		}
		dir, hint := opts.BinDir, "make tools"
		if comp.isJoinery() {
			if opts.JoineryBinDir == "" {
				errs = append(errs, fmt.Errorf("%s needs Options.JoineryBinDir", comp))
				continue
			}
			dir, hint = opts.JoineryBinDir, "make build"
		}
		if err := checkExecutable(filepath.Join(dir, string(comp))); err != nil {
			errs = append(errs, fmt.Errorf("%w; `%s` builds it", err, hint))
		}
	}
	return errors.Join(errs...)
}

// extraComponents returns the components of Options.Components, configured for this cluster.
func (c *Cluster) extraComponents() ([]component, error) {
	var comps []component
	for _, name := range c.opts.Components {
		var comp component
		var err error
		switch name {
		case ControllerManager:
			comp, err = c.controllerManager()
		case Kwok:
			comp, err = c.kwok()
		case JoineryScheduler:
			comp, err = c.joineryScheduler()
		case JoineryController:
			comp = c.joineryController()
		case AWSEmulator:
			comp = c.awsEmulator()
		default:
			err = fmt.Errorf("unknown component %q", name)
		}
		if err != nil {
			return nil, fmt.Errorf("prepare %s: %w", name, err)
		}
		if name.isJoinery() {
			comp.binDir = c.opts.JoineryBinDir
		}
		comps = append(comps, comp)
	}
	return comps, nil
}

// ProcessInfo describes one running component.
type ProcessInfo struct {
	Name  string `json:"name"`
	PID   int    `json:"pid"`
	Ports []int  `json:"ports"`
	Log   string `json:"log"`
}

// Processes lists the running components in start order.
func (c *Cluster) Processes() []ProcessInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	infos := make([]ProcessInfo, 0, len(c.processes))
	for _, p := range c.processes {
		infos = append(infos, ProcessInfo{Name: p.name, PID: p.pid(), Ports: slices.Clone(p.ports), Log: p.logPath})
	}
	return infos
}

// Server is kube-apiserver's URL.
func (c *Cluster) Server() string { return c.restConfig.Host }

// Crashed receives the error, with its log tail, of the first component that exits before
// Stop: a long-running caller (make run, make cluster) reports it instead of going on blind.
func (c *Cluster) Crashed() <-chan error { return c.crashed }

func (c *Cluster) watchForCrashes() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.processes {
		c.watchForCrash(p)
	}
}

// watchForCrash reports p on Crashed if it exits before Stop without being killed on purpose.
func (c *Cluster) watchForCrash(p *process) {
	go func() {
		<-p.exited
		if c.stopping.Load() || p.killed.Load() {
			return
		}
		select {
		case c.crashed <- p.exitError():
		default: // one report is enough; the others are in their logs
		}
	}()
}
