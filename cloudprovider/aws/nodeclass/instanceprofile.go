package nodeclass

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// Tags joinery puts on the instance profiles it manages. The managed-by and ec2nodeclass tags
// are also what makes a profile joinery's to delete.
const (
	TagManagedBy     = "karpenter.sh/managed-by"
	tagClusterPrefix = "kubernetes.io/cluster/"
)

// maxInstanceProfileName is IAM's limit on instance profile names.
const maxInstanceProfileName = 128

// InstanceProfileName is the name of the profile joinery manages for a class with spec.role:
// the cluster name and a hash of the region and class name, stable across restarts and
// distinct per class, region and cluster.
func (r *Resolver) InstanceProfileName(nc *awsv1.EC2NodeClass) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(r.opts.ClusterName + "/" + r.opts.Region + "/" + nc.Name))
	suffix := "-" + strconv.FormatUint(h.Sum64(), 10)
	prefix := r.opts.ClusterName
	if len(prefix)+len(suffix) > maxInstanceProfileName {
		prefix = prefix[:maxInstanceProfileName-len(suffix)]
	}
	return prefix + suffix
}

// managedTags are the tags of a managed profile.
func (r *Resolver) managedTags(nc *awsv1.EC2NodeClass) map[string]string {
	return map[string]string{
		TagManagedBy:                          r.opts.ClusterName,
		awsv1.TagEC2NodeClass:                 nc.Name,
		tagClusterPrefix + r.opts.ClusterName: "owned",
		corev1.LabelTopologyRegion:            r.opts.Region,
	}
}

// roleName accepts a role's name or path/name and returns the name IAM calls take.
func roleName(role string) string {
	return role[strings.LastIndex(role, "/")+1:]
}

// InstanceProfile makes sure the class's instance profile exists and returns its name. With
// spec.instanceProfile that profile must exist and is used as is. With spec.role joinery
// creates the profile if needed, tags it, and makes the role its only role, replacing a
// different one.
func (r *Resolver) InstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.InstanceProfile != nil {
		name := *nc.Spec.InstanceProfile
		if _, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
			return "", fmt.Errorf("getting instance profile %s: %w", name, err)
		}
		return name, nil
	}
	if nc.Spec.Role == "" {
		return "", fmt.Errorf("neither spec.role nor spec.instanceProfile is set")
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("nodeClass", nc.Name)
	name := r.InstanceProfileName(nc)
	role := roleName(nc.Spec.Role)
	profile, err := r.getOrCreateProfile(ctx, nc, name, log)
	if err != nil {
		return "", err
	}
	if err := r.ensureTags(ctx, nc, profile); err != nil {
		return "", err
	}
	for _, attached := range profile.Roles {
		current := aws.ToString(attached.RoleName)
		if current == role {
			return name, nil
		}
		log.Info("replacing the role of the managed instance profile", "instanceProfile", name, "from", current, "to", role)
		if _, err := r.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: aws.String(current),
		}); err != nil && !isCode(err, "NoSuchEntity") {
			return "", fmt.Errorf("removing role %s from instance profile %s: %w", current, name, err)
		}
	}
	if _, err := r.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{
		InstanceProfileName: aws.String(name), RoleName: aws.String(role),
	}); err != nil {
		return "", fmt.Errorf("adding role %s to instance profile %s: %w", role, name, err)
	}
	log.Info("added the role to the managed instance profile", "instanceProfile", name, "role", role)
	return name, nil
}

func (r *Resolver) getOrCreateProfile(ctx context.Context, nc *awsv1.EC2NodeClass, name string, log logr.Logger) (*iamtypes.InstanceProfile, error) {
	got, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err == nil {
		return got.InstanceProfile, nil
	}
	if !isCode(err, "NoSuchEntity") {
		return nil, fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	created, err := r.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: aws.String(name), Tags: iamTags(r.managedTags(nc)),
	})
	if isCode(err, "EntityAlreadyExists") {
		// Another reconcile created it in between; read what it made.
		got, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
		if err != nil {
			return nil, fmt.Errorf("getting instance profile %s: %w", name, err)
		}
		return got.InstanceProfile, nil
	}
	if err != nil {
		return nil, fmt.Errorf("creating instance profile %s: %w", name, err)
	}
	log.Info("created the managed instance profile", "instanceProfile", name)
	return created.InstanceProfile, nil
}

// ensureTags adds the managed tags a profile lacks (e.g. one created before they existed).
func (r *Resolver) ensureTags(ctx context.Context, nc *awsv1.EC2NodeClass, profile *iamtypes.InstanceProfile) error {
	have := map[string]string{}
	for _, t := range profile.Tags {
		have[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	missing := map[string]string{}
	for k, v := range r.managedTags(nc) {
		if have[k] != v {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := r.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{
		InstanceProfileName: profile.InstanceProfileName, Tags: iamTags(missing),
	}); err != nil {
		return fmt.Errorf("tagging instance profile %s: %w", aws.ToString(profile.InstanceProfileName), err)
	}
	return nil
}

// DeleteInstanceProfile removes the profile joinery manages for a class with spec.role. A
// profile that is gone is fine; one not tagged as this cluster's and this class's is left
// alone, since joinery did not create it.
func (r *Resolver) DeleteInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if nc.Spec.Role == "" {
		return nil // spec.instanceProfile is the user's, never joinery's to delete
	}
	name := r.InstanceProfileName(nc)
	got, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isCode(err, "NoSuchEntity") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	tags := map[string]string{}
	for _, t := range got.InstanceProfile.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	if tags[TagManagedBy] != r.opts.ClusterName || tags[awsv1.TagEC2NodeClass] != nc.Name {
		logr.FromContextOrDiscard(ctx).Info("not deleting an instance profile joinery does not manage", "instanceProfile", name)
		return nil
	}
	for _, role := range got.InstanceProfile.Roles {
		if _, err := r.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: role.RoleName,
		}); err != nil && !isCode(err, "NoSuchEntity") {
			return fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(role.RoleName), name, err)
		}
	}
	if _, err := r.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !isCode(err, "NoSuchEntity") {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	logr.FromContextOrDiscard(ctx).Info("deleted the managed instance profile", "nodeClass", nc.Name, "instanceProfile", name)
	return nil
}

func iamTags(tags map[string]string) []iamtypes.Tag {
	out := make([]iamtypes.Tag, 0, len(tags))
	for _, k := range sortedKeys(tags) {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return dedupe(keys)
}
