package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// explainInterval is how often the view asks `joinery explain node` about every node: each
// call captures the cluster and simulates, too much for every refresh.
const explainInterval = 10 * time.Second

// nextStep is what the next disruption pass does with a node, and why, as `joinery explain
// node` says it: its verdict and each check that did not pass.
type nextStep struct {
	verdict string
	reasons []string
}

// nextOf reads an explanation: the verdict, and the detail of each failed check.
func nextOf(ex *whatif.NodeExplanation) nextStep {
	step := nextStep{verdict: ex.Verdict}
	for _, c := range ex.Checks {
		if !c.OK {
			step.reasons = append(step.reasons, c.Check+": "+c.Detail)
		}
	}
	return step
}

// explainer keeps each node's nextStep current by running bin/joinery explain node in the
// background: the view's column is the CLI's own answer, not a second copy of its rules.
type explainer struct {
	bin       string
	args, env []string

	mu    sync.Mutex
	nodes []string
	steps map[string]nextStep
}

func newExplainer(p paths, c *localcluster.Cluster) *explainer {
	args, env := c.CLIArgs()
	return &explainer{bin: filepath.Join(p.joineryBin, "joinery"), args: args, env: env, steps: map[string]nextStep{}}
}

// setNodes names the nodes to explain on the next round.
func (e *explainer) setNodes(nodes []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nodes = nodes
}

// next returns every node's latest nextStep.
func (e *explainer) next() map[string]nextStep {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]nextStep, len(e.steps))
	for k, v := range e.steps {
		out[k] = v
	}
	return out
}

// run explains the nodes every explainInterval until ctx ends.
func (e *explainer) run(ctx context.Context) {
	tick := time.NewTicker(explainInterval)
	defer tick.Stop()
	for {
		e.mu.Lock()
		nodes := e.nodes
		e.mu.Unlock()
		steps := map[string]nextStep{}
		for _, node := range nodes {
			step, err := e.explain(ctx, node)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				step = nextStep{verdict: "?", reasons: []string{err.Error()}}
			}
			steps[node] = step
		}
		e.mu.Lock()
		e.steps = steps
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (e *explainer) explain(ctx context.Context, node string) (nextStep, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, append([]string{"explain", "node", node, "-o", "json"}, e.args...)...)
	cmd.Env = append(cmd.Environ(), e.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nextStep{}, fmt.Errorf("joinery explain node %s: %w: %s", node, err, lastLine(stderr.String()))
	}
	var ex whatif.NodeExplanation
	if err := json.Unmarshal(stdout.Bytes(), &ex); err != nil {
		return nextStep{}, fmt.Errorf("joinery explain node %s: %w", node, err)
	}
	return nextOf(&ex), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
