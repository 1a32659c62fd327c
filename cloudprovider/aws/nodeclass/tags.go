package nodeclass

import (
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// tagFilters turns a term's tags into EC2 filters, ANDed by EC2. A value of "*" or "" only
// asks for the key (tag-key); any other value is matched by EC2, wildcards included.
func tagFilters(tags awsv1.SelectorTags) []ec2types.Filter {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys) // stable requests: easier to read in logs and to compare in tests
	filters := make([]ec2types.Filter, 0, len(keys))
	for _, k := range keys {
		if v := tags[k]; v == "*" || v == "" {
			filters = append(filters, filter("tag-key", k))
		} else {
			filters = append(filters, filter("tag:"+k, v))
		}
	}
	return filters
}

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}
