package nodeclass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
)

// ReasonDryRunDisabled is ValidationSucceeded's reason when DISABLE_DRY_RUN skipped the
// launch dry-runs.
const ReasonDryRunDisabled = "DryRunDisabled"

// validate checks what the CRD's schema and CEL rules cannot, and returns the first problem
// ("" when there is none).
func validate(nc *awsv1.EC2NodeClass) string {
	if alias, ok := nc.Alias(); ok && nc.Spec.AMIFamily != nil && *nc.Spec.AMIFamily != alias.Family {
		return fmt.Sprintf("spec.amiFamily %s contradicts the alias %s, which implies %s", *nc.Spec.AMIFamily, nc.Spec.AMISelectorTerms[0].Alias, alias.Family)
	}
	if nc.AMIFamily() == "" {
		return "no AMI family: set spec.amiFamily or select AMIs by alias"
	}
	return ""
}

// validation sets ValidationSucceeded: validate's checks, then, as Karpenter does, the dry-runs
// of the launch calls (Options.DryRun) once the class has resolved what a launch needs (until
// then its failing part keeps it from Ready anyway). Dry-runs that passed are not repeated
// until their inputs change. It returns the dry-run's error, for the requeue: a refusal is
// tried again after the not-ready interval (IAM may be fixed), throttling or an AWS error soon.
func (c *Controller) validation(ctx context.Context, nc, stored *awsv1.EC2NodeClass, sched *schedule, now metav1.Time) error {
	if problem := validate(nc); problem != "" {
		setCondition(nc, awsv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, "ValidationFailed", problem, now)
		return nil
	}
	if c.opts.DisableDryRun {
		setCondition(nc, awsv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, ReasonDryRunDisabled,
			"DISABLE_DRY_RUN: the dry-runs of ec2:CreateFleet, ec2:CreateLaunchTemplate and ec2:RunInstances were skipped", now)
		return nil
	}
	key := dryRunKey(nc)
	if c.opts.DryRun == nil || key == "" || sched.dryRunPassed == key {
		setCondition(nc, awsv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded, "", now)
		return nil
	}
	err := c.opts.DryRun(ctx, nc)
	if err == nil {
		sched.dryRunPassed = key
		setCondition(nc, awsv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, awsv1.ConditionTypeValidationSucceeded, "", now)
		return nil
	}
	sched.dryRunPassed = ""
	previous := meta.FindStatusCondition(stored.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
	var denied *nodeclass.DryRunDeniedError
	reason := partValidation.failedReason(nodeclass.Classify(err))
	if errors.As(err, &denied) {
		reason = denied.Reason()
	} else if nodeclass.Classify(err).Retryable() && previous != nil && previous.Status == metav1.ConditionTrue {
		// A throttled dry-run does not undo one that passed.
		return err
	}
	message := nodeclass.Message(err)
	setCondition(nc, awsv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, reason, message, now)
	if previous == nil || previous.Status != metav1.ConditionFalse || previous.Reason != reason || previous.Message != message {
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, reason, "Validate", "Validating the launch permissions failed: %s", message)
	}
	return err
}

// dryRunKey identifies what the dry-runs send: the resolved subnet, security groups, AMI and
// instance profile, and the tags (the spec's generation covers them). "" when the class has
// not resolved them all.
func dryRunKey(nc *awsv1.EC2NodeClass) string {
	s := nc.Status
	if len(s.Subnets) == 0 || len(s.SecurityGroups) == 0 || len(s.AMIs) == 0 || s.InstanceProfile == "" {
		return ""
	}
	data, err := json.Marshal([]any{nc.Generation, s.Subnets[0].ID, s.SecurityGroups, s.AMIs[0].ID, s.InstanceProfile})
	if err != nil {
		return "" // plain strings and numbers always encode
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return strconv.FormatUint(h.Sum64(), 36)
}
