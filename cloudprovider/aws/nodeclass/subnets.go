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

// Subnets resolves spec.subnetSelectorTerms: the union of every term's matches, most free IP
// addresses first (ties by id), which is the order launches prefer within a zone.
func (r *Resolver) Subnets(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.Subnet, error) {
	found := map[string]ec2types.Subnet{}
	for _, filters := range subnetQueries(nc.Spec.SubnetSelectorTerms) {
		pager := ec2.NewDescribeSubnetsPaginator(r.ec2, &ec2.DescribeSubnetsInput{Filters: filters})
		for pager.HasMorePages() {
			out, err := pager.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing subnets: %w", err)
			}
			for _, sn := range out.Subnets {
				found[aws.ToString(sn.SubnetId)] = sn
			}
		}
	}
	if len(found) == 0 {
		return nil, &NoMatchError{What: "subnets", Detail: "no subnet matches any of spec.subnetSelectorTerms"}
	}
	subnets := make([]ec2types.Subnet, 0, len(found))
	for _, sn := range found {
		subnets = append(subnets, sn)
	}
	sort.Slice(subnets, func(i, j int) bool {
		a, b := aws.ToInt32(subnets[i].AvailableIpAddressCount), aws.ToInt32(subnets[j].AvailableIpAddressCount)
		if a != b {
			return a > b
		}
		return aws.ToString(subnets[i].SubnetId) < aws.ToString(subnets[j].SubnetId)
	})
	out := make([]awsv1.Subnet, 0, len(subnets))
	for _, sn := range subnets {
		out = append(out, awsv1.Subnet{ID: aws.ToString(sn.SubnetId), Zone: aws.ToString(sn.AvailabilityZone), ZoneID: aws.ToString(sn.AvailabilityZoneId)})
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("resolved subnets", "nodeClass", nc.Name, "count", len(out))
	return out, nil
}

// subnetQueries is one DescribeSubnets filter set per tag term, plus one for all id terms
// together. Ids go in a filter rather than SubnetIds so an unknown id matches nothing instead
// of failing the whole call.
func subnetQueries(terms []awsv1.SubnetSelectorTerm) [][]ec2types.Filter {
	var queries [][]ec2types.Filter
	var ids []string
	for _, term := range terms {
		if term.ID != "" {
			ids = append(ids, term.ID)
			continue
		}
		if len(term.Tags) > 0 {
			queries = append(queries, tagFilters(term.Tags))
		}
	}
	if len(ids) > 0 {
		queries = append(queries, []ec2types.Filter{filter("subnet-id", ids...)})
	}
	return queries
}
