package nodeclass

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// defaultNameOwners are the owners a name term is narrowed to when it names none, so that an
// image another account published under the same name is never picked up.
var defaultNameOwners = []string{"self", "amazon"}

// maxParametersPerCall is SSM GetParameters' limit.
const maxParametersPerCall = 10

// candidate is an image with one set of requirements it serves.
type candidate struct {
	id, name     string
	created      time.Time
	deprecated   bool
	requirements []corev1.NodeSelectorRequirement
}

// AMIs resolves spec.amiSelectorTerms. An alias reads AWS's public SSM parameters for the
// cluster's Kubernetes version and gives each image its variant's requirements (architecture,
// GPUs, accelerators); other terms give each image its architecture. For every distinct set of
// requirements the newest image wins, a deprecated one only when nothing else serves the set.
func (r *Resolver) AMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	var candidates []candidate
	var err error
	if alias, ok := nc.Alias(); ok {
		candidates, err = r.aliasCandidates(ctx, alias)
	} else {
		candidates, err = r.selectorCandidates(ctx, nc.Spec.AMISelectorTerms)
	}
	if err != nil {
		return nil, err
	}
	amis := newestPerRequirements(candidates)
	if len(amis) == 0 {
		return nil, &NoMatchError{What: "AMIs", Detail: "no AMI matches spec.amiSelectorTerms"}
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("resolved AMIs", "nodeClass", nc.Name, "count", len(amis))
	return amis, nil
}

func (r *Resolver) aliasCandidates(ctx context.Context, alias awsv1.AMIAlias) ([]candidate, error) {
	k8sVersion, err := r.opts.KubernetesVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolving alias %s: %w", aliasString(alias), err)
	}
	params, err := aliasParameters(alias, k8sVersion)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(params))
	for _, p := range params {
		paths = append(paths, p.path)
	}
	values, err := r.parameterValues(ctx, paths)
	if err != nil {
		return nil, err
	}
	if len(values) == 0 {
		return nil, &NoMatchError{What: "AMIs", Detail: fmt.Sprintf("alias %s has no images for Kubernetes %s: none of its SSM parameters exist (e.g. %s)",
			aliasString(alias), k8sVersion, paths[0])}
	}
	ids := make([]string, 0, len(values))
	for _, id := range values {
		ids = append(ids, id)
	}
	images, err := r.describeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("image-id", dedupe(ids)...)}})
	if err != nil {
		return nil, err
	}
	byID := map[string]ec2types.Image{}
	for _, img := range images {
		byID[aws.ToString(img.ImageId)] = img
	}
	var out []candidate
	for _, p := range params {
		img, ok := byID[values[p.path]]
		if !ok {
			continue // no parameter, or it names an image that is gone
		}
		for _, reqs := range p.requirements {
			out = append(out, r.candidate(img, reqs))
		}
	}
	return out, nil
}

func (r *Resolver) selectorCandidates(ctx context.Context, terms []awsv1.AMISelectorTerm) ([]candidate, error) {
	var ids []string
	var queries []*ec2.DescribeImagesInput
	for _, term := range terms {
		switch {
		case term.ID != "":
			ids = append(ids, term.ID)
		case term.SSMParameter != "":
			out, err := r.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(term.SSMParameter)})
			if err != nil {
				return nil, fmt.Errorf("getting SSM parameter %s: %w", term.SSMParameter, err)
			}
			ids = append(ids, aws.ToString(out.Parameter.Value))
		default:
			in := &ec2.DescribeImagesInput{Filters: tagFilters(term.Tags)}
			if term.Name != "" {
				in.Filters = append(in.Filters, filter("name", term.Name))
			}
			switch {
			case term.Owner != "":
				in.Owners = strings.Split(term.Owner, ",")
			case term.Name != "":
				in.Owners = defaultNameOwners
			}
			queries = append(queries, in)
		}
	}
	if len(ids) > 0 {
		queries = append(queries, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("image-id", dedupe(ids)...)}})
	}
	seen := map[string]bool{}
	var out []candidate
	for _, in := range queries {
		images, err := r.describeImages(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, img := range images {
			id := aws.ToString(img.ImageId)
			arch := kubeArch(string(img.Architecture))
			if seen[id] || arch == "" {
				continue
			}
			seen[id] = true
			out = append(out, r.candidate(img, []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}))
		}
	}
	return out, nil
}

// describeImages pages through DescribeImages, deprecated images included so they can be
// flagged and used as a last resort.
func (r *Resolver) describeImages(ctx context.Context, in *ec2.DescribeImagesInput) ([]ec2types.Image, error) {
	in.IncludeDeprecated = aws.Bool(true)
	var out []ec2types.Image
	pager := ec2.NewDescribeImagesPaginator(r.ec2, in)
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing images: %w", err)
		}
		out = append(out, page.Images...)
	}
	return out, nil
}

// parameterValues reads SSM parameters in batches and returns the values of those that exist.
func (r *Resolver) parameterValues(ctx context.Context, names []string) (map[string]string, error) {
	values := map[string]string{}
	for start := 0; start < len(names); start += maxParametersPerCall {
		batch := names[start:min(start+maxParametersPerCall, len(names))]
		out, err := r.ssm.GetParameters(ctx, &ssm.GetParametersInput{Names: batch})
		if err != nil {
			return nil, fmt.Errorf("getting SSM parameters: %w", err)
		}
		for _, p := range out.Parameters {
			values[aws.ToString(p.Name)] = aws.ToString(p.Value)
		}
	}
	return values, nil
}

func (r *Resolver) candidate(img ec2types.Image, reqs []corev1.NodeSelectorRequirement) candidate {
	c := candidate{id: aws.ToString(img.ImageId), name: aws.ToString(img.Name), requirements: reqs}
	c.created, _ = time.Parse(time.RFC3339, aws.ToString(img.CreationDate)) // an unparsable date sorts as oldest
	if t, err := time.Parse(time.RFC3339, aws.ToString(img.DeprecationTime)); err == nil {
		c.deprecated = !r.now().Before(t)
	}
	return c
}

// newestPerRequirements keeps, per distinct requirement set, the best image: not deprecated
// over deprecated, then the newest, then the lowest id so equal dates resolve the same way
// every time.
func newestPerRequirements(candidates []candidate) []awsv1.AMI {
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.deprecated != b.deprecated {
			return !a.deprecated
		}
		if !a.created.Equal(b.created) {
			return a.created.After(b.created)
		}
		return a.id < b.id
	})
	seen := map[string]bool{}
	var out []awsv1.AMI
	for _, c := range candidates {
		key := requirementsKey(c.requirements)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, awsv1.AMI{ID: c.id, Name: c.name, Requirements: c.requirements, Deprecated: c.deprecated})
	}
	return out
}

func requirementsKey(reqs []corev1.NodeSelectorRequirement) string {
	parts := make([]string, 0, len(reqs))
	for _, r := range reqs {
		values := append([]string(nil), r.Values...)
		sort.Strings(values)
		parts = append(parts, r.Key+" "+string(r.Operator)+" "+strings.Join(values, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

func aliasString(a awsv1.AMIAlias) string {
	return strings.ToLower(a.Family) + "@" + a.Version
}

func dedupe(values []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(values))
	for _, v := range values {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}
