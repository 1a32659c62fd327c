package disruption

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// EventVolatileRequestsChanged is the Warning on a candidate whose command was rejected
// because a pod's volatile requests no longer match what the simulation used.
const EventVolatileRequestsChanged = "VolatileRequestsChanged"

// RequestPredictor sets a simulated pod's requests to what the pod would get if it were
// recreated now (pods annotated autoscaling.k8s.io/volatile-requests; controller/volatile's
// Cache). pod is the simulation's own copy; Predict reports whether it changed it.
type RequestPredictor interface {
	Predict(pod *corev1.Pod) bool
}

// VolatileVerifier checks, just before a command evicts anything, that the requests the
// simulation predicted for the candidates' pods still hold (a fresh dry-run;
// controller/volatile's Verifier). A non-empty answer rejects the command.
type VolatileVerifier interface {
	Verify(ctx context.Context, pods []*corev1.Pod) (string, error)
}

// SetRequestPredictor makes Simulate plan the candidates' pods with p's predicted requests.
func (s *SolverSimulator) SetRequestPredictor(p RequestPredictor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.predictor = p
}

// predict applies the predictor to the moving pods of batch, which are the view's copies.
func (s *SolverSimulator) predict(batch []*corev1.Pod, moving sets.Set[types.UID]) {
	s.mu.Lock()
	predictor := s.predictor
	s.mu.Unlock()
	if predictor == nil {
		return
	}
	for _, p := range batch {
		if moving.Has(p.UID) {
			predictor.Predict(p)
		}
	}
}

// verifyVolatile asks the verifier about the command's pods: a *Refusal when it rejects the
// command, whose candidates then get an event saying why.
func (c *Controller) verifyVolatile(ctx context.Context, cmd *Command) error {
	if c.opts.Volatile == nil {
		return nil
	}
	var pods []*corev1.Pod
	for _, cand := range cmd.Candidates {
		pods = append(pods, cand.Pods...)
	}
	why, err := c.opts.Volatile.Verify(ctx, pods)
	if err != nil {
		return fmt.Errorf("verifying volatile requests: %w", err)
	}
	if why == "" {
		return nil
	}
	for _, cand := range cmd.Candidates {
		c.pub.publish(cand.NodeClaim, cand.Node, corev1.EventTypeWarning, EventVolatileRequestsChanged, "Validate", why)
	}
	return &Refusal{Message: why}
}
