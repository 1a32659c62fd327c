package interruption

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/state"
)

// EventSource is the component the controller's events are reported from, Karpenter's.
const EventSource = "karpenter"

// SetupOptions configure Setup.
type SetupOptions struct {
	// Queue is the --interruption-queue name; Setup does nothing when it is empty.
	Queue string
	// Namespace holds the unavailable-offerings ConfigMap (the controller's namespace).
	Namespace string
	// Preplanner, when not nil, launches capacity for an interrupted node's pods before its
	// NodeClaim is deleted.
	Preplanner cloudprovider.Preplanner
	// StatusPoller tunes the EC2 instance status poller that runs with the controller.
	StatusPoller StatusPollerOptions
}

// Setup adds the interruption controller and the instance status poller to mgr when a queue is
// configured. cfg is the AWS
// configuration the AWS provider uses (region, credentials, endpoint).
func Setup(mgr ctrl.Manager, cfg aws.Config, opts SetupOptions) error {
	if opts.Queue == "" {
		return nil
	}
	unavailable := state.NewUnavailableOfferings(mgr.GetClient(), mgr.GetAPIReader(), opts.Namespace, clock.RealClock{})
	c := New(mgr.GetClient(), sqs.NewFromConfig(cfg), unavailable, mgr.GetEventRecorder(EventSource), Options{Queue: opts.Queue, Preplanner: opts.Preplanner})
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("setting up %s: %w", Name, err)
	}
	if err := mgr.Add(NewStatusPoller(c, ec2.NewFromConfig(cfg), opts.StatusPoller)); err != nil {
		return fmt.Errorf("setting up %s: %w", StatusPollerName, err)
	}
	return nil
}
