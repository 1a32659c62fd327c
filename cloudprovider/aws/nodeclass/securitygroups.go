package nodeclass

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// SecurityGroups resolves spec.securityGroupSelectorTerms: the union of every term's matches,
// sorted by id. Instances get all of them.
func (r *Resolver) SecurityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	found := map[string]string{}
	for _, filters := range securityGroupQueries(nc.Spec.SecurityGroupSelectorTerms) {
		pager := ec2.NewDescribeSecurityGroupsPaginator(r.ec2, &ec2.DescribeSecurityGroupsInput{Filters: filters})
		for pager.HasMorePages() {
			out, err := pager.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing security groups: %w", err)
			}
			for _, sg := range out.SecurityGroups {
				found[aws.ToString(sg.GroupId)] = aws.ToString(sg.GroupName)
			}
		}
	}
	if len(found) == 0 {
		return nil, &NoMatchError{What: "security groups", Detail: "no security group matches any of spec.securityGroupSelectorTerms"}
	}
	out := make([]awsv1.SecurityGroup, 0, len(found))
	for id, name := range found {
		out = append(out, awsv1.SecurityGroup{ID: id, Name: name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	logr.FromContextOrDiscard(ctx).V(1).Info("resolved security groups", "nodeClass", nc.Name, "count", len(out))
	return out, nil
}

// securityGroupQueries is one filter set per name/tag term (name and tags ANDed) plus one for
// all id terms together.
func securityGroupQueries(terms []awsv1.SecurityGroupSelectorTerm) [][]ec2types.Filter {
	var queries [][]ec2types.Filter
	var ids []string
	for _, term := range terms {
		if term.ID != "" {
			ids = append(ids, term.ID)
			continue
		}
		filters := tagFilters(term.Tags)
		if term.Name != "" {
			filters = append(filters, filter("group-name", term.Name))
		}
		if len(filters) > 0 {
			queries = append(queries, filters)
		}
	}
	if len(ids) > 0 {
		queries = append(queries, []ec2types.Filter{filter("group-id", ids...)})
	}
	return queries
}
