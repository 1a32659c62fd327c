package awsemulator

import (
	"reflect"
	"testing"
)

func TestQueryLists(t *testing.T) {
	q, err := parseQuery("Action=DescribeSubnets&SubnetId.2=subnet-b&SubnetId.1=subnet-a&SubnetId.10=subnet-j" +
		"&Filter.1.Name=tag%3Aenv&Filter.1.Value.1=prod&Filter.1.Value.2=dev&Filter.2.Name=vpc-id&Filter.2.Value.1=vpc-1" +
		"&TagSpecification.1.ResourceType=instance&TagSpecification.1.Tag.1.Key=Name&TagSpecification.1.Tag.1.Value=n1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.List("SubnetId"), []string{"subnet-a", "subnet-b", "subnet-j"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List = %v, want %v (numeric order)", got, want)
	}
	wantFilters := []Filter{{Name: "tag:env", Values: []string{"prod", "dev"}}, {Name: "vpc-id", Values: []string{"vpc-1"}}}
	if got := q.Filters(); !reflect.DeepEqual(got, wantFilters) {
		t.Errorf("Filters = %v, want %v", got, wantFilters)
	}
	specs := q.Members("TagSpecification")
	if len(specs) != 1 || specs[0].Get("ResourceType") != "instance" {
		t.Fatalf("TagSpecification members = %v", specs)
	}
	if got := specs[0].Tags("Tag"); !reflect.DeepEqual(got, map[string]string{"Name": "n1"}) {
		t.Errorf("Tags = %v", got)
	}
	if n, err := q.Int("MaxResults", 7); err != nil || n != 7 {
		t.Errorf("Int default = %d, %v", n, err)
	}
}
