package nodeclass

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// PlacementGroups resolves spec.placementGroupSelector to the one available placement group it
// names, as a list of at most one. Without a selector it is an empty list; a selector that
// names no available group (unknown, or pending or deleting) is a NoMatchError, which keeps
// the class from launching anywhere else.
func (r *Resolver) PlacementGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.PlacementGroup, error) {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		return nil, nil
	}
	// Only available groups take instances; EC2 filters the others out, as Karpenter asks it to.
	in := &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{filter("state", string(ec2types.PlacementGroupStateAvailable))}}
	what := fmt.Sprintf("name %q", sel.Name)
	if sel.ID != "" {
		in.GroupIds = []string{sel.ID}
		what = fmt.Sprintf("id %q", sel.ID)
	} else {
		in.GroupNames = []string{sel.Name}
	}
	out, err := r.ec2.DescribePlacementGroups(ctx, in)
	// EC2 answers a name or id it does not know with InvalidPlacementGroup.Unknown.
	if awserr.IsNotFound(err) || isCode(err, "InvalidPlacementGroup.Unknown") {
		return nil, &NoMatchError{What: "placement group", Detail: fmt.Sprintf("no available placement group has %s", what)}
	}
	if err != nil {
		return nil, fmt.Errorf("describing placement groups: %w", err)
	}
	if len(out.PlacementGroups) == 0 {
		return nil, &NoMatchError{What: "placement group", Detail: fmt.Sprintf("no available placement group has %s", what)}
	}
	pg := out.PlacementGroups[0]
	resolved := awsv1.PlacementGroup{
		ID:             aws.ToString(pg.GroupId),
		Name:           aws.ToString(pg.GroupName),
		Strategy:       awsv1.PlacementGroupStrategy(pg.Strategy),
		PartitionCount: aws.ToInt32(pg.PartitionCount),
		SpreadLevel:    string(pg.SpreadLevel),
		State:          string(pg.State),
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("resolved placement group", "nodeClass", nc.Name, "id", resolved.ID, "strategy", resolved.Strategy)
	return []awsv1.PlacementGroup{resolved}, nil
}
