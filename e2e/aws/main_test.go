// Package aws is the e2e suite of the AWS provider: joinery-controller and joinery-scheduler
// run with --cloud-provider=aws against the AWS emulator (cmd/awsemulator), whose node agent
// registers launched instances as Nodes, so pending pods go all the way through EC2NodeClass
// resolution, CreateFleet, user data and registration, as on EKS. Tests drive the emulator's
// faults through its admin API (env.AWS).
//
// The tests run one after the other: faults such as throttling apply to every caller.
package aws

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

var env *framework.Env

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, &env, framework.WithCloudProvider(localcluster.CloudProviderAWS)))
}
