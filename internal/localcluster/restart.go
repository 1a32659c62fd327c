package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
)

// KillComponent stops one of Options.Components the way a crash does: SIGKILL, with no chance
// to clean up (a leader keeps its lease until the lease expires). The rest of the cluster runs
// on without it until StartComponent.
func (c *Cluster) KillComponent(name Component) error {
	c.mu.Lock()
	i := slices.IndexFunc(c.processes, func(p *process) bool { return p.name == string(name) })
	if i < 0 {
		c.mu.Unlock()
		return fmt.Errorf("%s is not running", name)
	}
	p := c.processes[i]
	c.processes = slices.Delete(c.processes, i, i+1)
	c.mu.Unlock()

	p.killed.Store(true) // not a crash to report
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", p.name, p.pid(), err)
	}
	<-p.exited
	c.log.Info("component killed", "component", p.name, "pid", p.pid())
	return nil
}

// StartComponent starts a component that KillComponent stopped, with its usual flags followed
// by args (the last value of a repeated flag wins), and waits until it is ready.
func (c *Cluster) StartComponent(ctx context.Context, name Component, args ...string) error {
	c.mu.Lock()
	running := slices.ContainsFunc(c.processes, func(p *process) bool { return p.name == string(name) })
	c.mu.Unlock()
	if running {
		return fmt.Errorf("%s is already running", name)
	}
	if !slices.Contains(c.opts.Components, name) {
		return fmt.Errorf("%s is not one of the cluster's components %v", name, c.opts.Components)
	}
	comps, err := c.extraComponents()
	if err != nil {
		return err
	}
	i := slices.Index(c.opts.Components, name)
	comp := comps[i]
	configure := comp.configure
	comp.configure = func() ([]string, error) {
		base, err := configure()
		return append(base, args...), err
	}
	if err := c.startComponent(ctx, comp); err != nil {
		return err
	}
	c.mu.Lock()
	p := c.processes[len(c.processes)-1]
	c.mu.Unlock()
	c.watchForCrash(p)
	return nil
}
