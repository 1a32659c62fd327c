package integration

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	ncctrl "github.com/joinery-dev/joinery/cloudprovider/aws/controllers/nodeclass"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// TestAMIsRefreshOnTheirOwnInterval: with a short AMI refresh interval and a long subnet one,
// a ready class keeps asking EC2 for images (its requeues) while its subnets and security
// groups are described only once.
func TestAMIsRefreshOnTheirOwnInterval(t *testing.T) {
	e := startWith(t, func(_ aws.Config, o *ncctrl.Options) {
		o.AMIRefreshInterval = time.Second
		o.SubnetRefreshInterval = time.Hour
	})
	e.create(t, class("refreshed", nil))
	e.waitForClass(t, "refreshed", "Ready=True", conditionIs(awsv1.ConditionTypeReady, "True", ""))
	images, subnets, groups := e.srv.Calls(awsemulator.ServiceEC2, "DescribeImages"), e.srv.Calls(awsemulator.ServiceEC2, "DescribeSubnets"), e.srv.Calls(awsemulator.ServiceEC2, "DescribeSecurityGroups")

	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := waitFor(ctx, func() (bool, error) {
		return e.srv.Calls(awsemulator.ServiceEC2, "DescribeImages") >= images+3, nil
	}); err != nil {
		t.Fatalf("DescribeImages was called %d times after Ready (%d before), want 3 more refreshes: %v",
			e.srv.Calls(awsemulator.ServiceEC2, "DescribeImages")-images, images, err)
	}
	if got := e.srv.Calls(awsemulator.ServiceEC2, "DescribeSubnets"); got != subnets {
		t.Errorf("DescribeSubnets calls went from %d to %d within the hour-long subnet refresh interval", subnets, got)
	}
	if got := e.srv.Calls(awsemulator.ServiceEC2, "DescribeSecurityGroups"); got != groups {
		t.Errorf("DescribeSecurityGroups calls went from %d to %d within the hour-long subnet refresh interval", groups, got)
	}
}
