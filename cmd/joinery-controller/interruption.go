package main

import (
	"context"
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joinery-dev/joinery/cloudprovider/aws/controllers/interruption"
	awsprovider "github.com/joinery-dev/joinery/cloudprovider/aws/provider"
)

// setupInterruption adds the interruption controller when --interruption-queue names a queue.
func setupInterruption(ctx context.Context, mgr ctrl.Manager, namespace string, opts options) error {
	if opts.interruptionQueue == "" {
		return nil
	}
	if opts.cloudProvider != awsprovider.Name {
		return errors.New("--interruption-queue needs --cloud-provider=aws")
	}
	cfg, err := opts.aws.AWSConfig(ctx)
	if err != nil {
		return fmt.Errorf("loading the AWS configuration for the interruption queue: %w", err)
	}
	return interruption.Setup(mgr, cfg, interruption.SetupOptions{Queue: opts.interruptionQueue, Namespace: namespace})
}
