package aws

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// driftTimeout bounds an EC2NodeClass re-resolved → its NodeClaims marked Drifted.
const driftTimeout = time.Minute

// TestAMIAliasReleaseDriftsNodeClaims is the drift scenario: AWS moves the
// al2023@latest SSM parameter to another AL2023 image (the emulator publishes one release per
// Kubernetes version, so another version's image stands in for the new release); once the EC2NodeClass is resolved again, the
// NodeClaim running the old image is marked Drifted with AMIDrift.
func TestAMIAliasReleaseDriftsNodeClaims(t *testing.T) {
	admin := emulator(t)
	env.RequireLocal(t)
	pool := framework.UniqueName("drift")
	createNodeClass(t, pool)
	// amd64 c and m types run the standard x86_64 AL2023 image.
	createNodePool(t, pool, pool,
		`{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`,
		`{key: kubernetes.io/arch, operator: In, values: [amd64]}`,
		`{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}`)
	ns := env.Namespace(t)
	createPods(t, ns, pool, 1, "500m")
	env.AwaitPods(t, ns, groupLabel+"="+pool, 1, runningTimeout, running)
	nc := nodeClaimsOf(t, pool, 1)[0]
	if cond := condition(nc, "Drifted"); cond != nil {
		t.Fatalf("a fresh NodeClaim is Drifted: %v", cond)
	}
	instances := live(instancesOf(t, pool))
	if len(instances) != 1 {
		t.Fatalf("%d live instances for the NodePool, want 1", len(instances))
	}
	oldImage := instances[0].ImageID

	cfg := emulatorConfig(t)
	ssmClient := ssm.NewFromConfig(cfg)
	latest := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/x86_64/standard/recommended/image_id", kubernetesVersion(t))
	current, err := ssmClient.GetParameter(t.Context(), &ssm.GetParameterInput{Name: awssdk.String(latest)})
	if err != nil {
		t.Fatalf("reading %s: %v", latest, err)
	}
	if got := awssdk.ToString(current.Parameter.Value); got != oldImage {
		t.Fatalf("the instance runs %s but %s names %s: the test would not exercise the alias", oldImage, latest, got)
	}
	newImage := otherImage(t, cfg, oldImage)

	// The "release": the alias's parameter names another image. Restored afterwards, since the
	// emulator is shared by the suite.
	begin := time.Now()
	if err := admin.PutParameter(t.Context(), latest, newImage); err != nil {
		t.Fatalf("moving %s: %v", latest, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin.PutParameter(ctx, latest, oldImage); err != nil {
			t.Errorf("restoring %s: %v", latest, err)
		}
	})
	// The class controller re-resolves every 5 minutes; an annotation change makes it do so now,
	// as `kubectl annotate` would.
	patch := fmt.Sprintf(`{"metadata": {"annotations": {"joinery.dev/e2e-refresh": %q}}}`, begin.Format(time.RFC3339Nano))
	if _, err := env.Dynamic.Resource(framework.EC2NodeClasses).Patch(t.Context(), pool, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotating ec2nodeclass %s: %v", pool, err)
	}
	env.AwaitNodeClaims(t, "karpenter.sh/nodepool="+pool, 1, driftTimeout, func(nc unstructured.Unstructured) error {
		cond := condition(nc, "Drifted")
		if cond == nil || cond["status"] != "True" || cond["reason"] != "AMIDrift" {
			return fmt.Errorf("Drifted = %v, want True with AMIDrift", cond)
		}
		return nil
	})
	t.Logf("alias parameter moved → NodeClaim Drifted (AMIDrift) in %s", time.Since(begin).Round(time.Millisecond))
}

// kubernetesVersion is the API server's major.minor, the version the alias's parameters are
// published for.
func kubernetesVersion(t *testing.T) string {
	t.Helper()
	v, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	return v.Major + "." + strings.TrimSuffix(v.Minor, "+")
}

// otherImage returns another EKS-optimized AL2023 standard x86_64 image than current, from
// the images AWS publishes (DescribeImages), preferring the newest.
func otherImage(t *testing.T, cfg awssdk.Config, current string) string {
	t.Helper()
	out, err := ec2.NewFromConfig(cfg).DescribeImages(t.Context(), &ec2.DescribeImagesInput{
		Owners:  []string{"amazon"},
		Filters: []ec2types.Filter{{Name: awssdk.String("name"), Values: []string{"amazon-eks-node-al2023-x86_64-standard-*"}}},
	})
	if err != nil {
		t.Fatalf("describing AL2023 images: %v", err)
	}
	var best ec2types.Image
	for _, img := range out.Images {
		if id := awssdk.ToString(img.ImageId); id != current && awssdk.ToString(img.CreationDate) > awssdk.ToString(best.CreationDate) {
			best = img
		}
	}
	if best.ImageId == nil {
		t.Fatalf("no AL2023 x86_64 standard image other than %s", current)
	}
	return awssdk.ToString(best.ImageId)
}

// condition returns the NodeClaim's condition of type condType, or nil.
func condition(nc unstructured.Unstructured, condType string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(nc.Object, "status", "conditions")
	for _, c := range conds {
		if cond, ok := c.(map[string]any); ok && cond["type"] == condType {
			return cond
		}
	}
	return nil
}
