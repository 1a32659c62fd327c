package controller

import (
	"flag"
	"fmt"
	"time"

	"github.com/joinery-dev/joinery/cloudprovider/aws"
	nodeclasscontroller "github.com/joinery-dev/joinery/cloudprovider/aws/controllers/nodeclass"
	"github.com/joinery-dev/joinery/internal/settings"
)

// bindNodeClassFlags registers the AWS settings only joinery-controller's EC2NodeClass
// controller uses, each defaulting to its Karpenter setting from the environment.
func bindNodeClassFlags(fs *flag.FlagSet, s *aws.Settings, env settings.Settings) {
	s.AMIRefreshInterval = deref(env.AMIRefreshInterval, nodeclasscontroller.DefaultAMIRefreshInterval)
	s.SubnetRefreshInterval = deref(env.SubnetRefreshInterval, nodeclasscontroller.DefaultSubnetRefreshInterval)
	fs.Var(refreshInterval{&s.AMIRefreshInterval}, "ami-refresh-interval", "aws: how often an EC2NodeClass's AMIs are resolved again (SSM parameters, DescribeImages), at least 1m (env AMI_REFRESH_INTERVAL)")
	fs.Var(refreshInterval{&s.SubnetRefreshInterval}, "subnet-refresh-interval", "aws: how often an EC2NodeClass's subnets and security groups are resolved again (DescribeSubnets, DescribeSecurityGroups), at least 1m (env SUBNET_REFRESH_INTERVAL)")
	fs.BoolVar(&s.DisableDryRun, "disable-dry-run", deref(env.DisableDryRun, false), "aws: skip the EC2 dry-runs of CreateFleet, CreateLaunchTemplate and RunInstances that prove an EC2NodeClass's launch permissions; ValidationSucceeded then says DryRunDisabled (env DISABLE_DRY_RUN)")
}

// refreshInterval is a duration flag refusing less than settings.MinRefreshInterval, as the
// environment variable does.
type refreshInterval struct{ d *time.Duration }

func (r refreshInterval) String() string {
	if r.d == nil {
		return ""
	}
	return r.d.String()
}

func (r refreshInterval) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	if d < settings.MinRefreshInterval {
		return fmt.Errorf("%s is shorter than %s", d, settings.MinRefreshInterval)
	}
	*r.d = d
	return nil
}
