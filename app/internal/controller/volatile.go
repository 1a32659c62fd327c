package controller

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/controller/volatile"
)

// setupVolatileRequests adds the controller that predicts the requests of pods annotated
// autoscaling.k8s.io/volatile-requests by dry-running their owners' templates, makes the
// disruption simulation use its predictions, and returns the check disruption runs before it
// evicts.
func setupVolatileRequests(mgr ctrl.Manager, sim *disruptionSimulation) (disruption.VolatileVerifier, error) {
	kube, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("building the dry-run clientset: %w", err)
	}
	predictor := &volatile.Predictor{Reader: mgr.GetClient(), Kube: kube}
	cache := volatile.NewCache()
	if err := volatile.NewController(mgr.GetClient(), predictor, cache).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up %s: %w", volatile.Name, err)
	}
	sim.simulator.SetRequestPredictor(cache)
	return &volatile.Verifier{Predictor: predictor, Cache: cache}, nil
}
