package nodeclass

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// The seeds' EC2NodeClass page (/work/shared/seeds/000_ea6cc0ec5bbde25c.txt) is the source of
// the selectors below; each case names the line its selector comes from. The seed's YAML lost
// its indentation, so the terms are re-indented but otherwise copied as written, with
// ${CLUSTER_NAME} standing for the emulator's cluster.

// testNow is when the tests judge deprecation: after the 2024 releases' two-year deprecation.
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type env struct {
	srv      *awsemulator.Server
	resolver *Resolver
}

func newEnv(t *testing.T, k8sVersion string) *env {
	t.Helper()
	srv := awsemulator.NewServer(awsemulator.Options{})
	t.Cleanup(srv.Close)
	srv.SetClock(func() time.Time { return testNow })
	cfg := srv.Config()
	cfg.Retryer = func() aws.Retryer { return noBackoff{retryDefault()} }
	r, err := New(ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg), iam.NewFromConfig(cfg), Options{
		ClusterName: awsemulator.DefaultClusterName, Region: srv.Region,
		KubernetesVersion: StaticKubernetesVersion(k8sVersion), Clock: clocktesting.NewFakePassiveClock(testNow),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, resolver: r}
}

// terms parses a YAML list of selector terms after substituting the cluster name.
func terms[T any](t *testing.T, doc string) []T {
	t.Helper()
	doc = strings.NewReplacer("${CLUSTER_NAME}", awsemulator.DefaultClusterName, "$CLUSTER_NAME", awsemulator.DefaultClusterName).Replace(doc)
	var out []T
	if err := yaml.UnmarshalStrict([]byte(doc), &out); err != nil {
		t.Fatalf("selector YAML: %v\n%s", err, doc)
	}
	return out
}

func (e *env) addSubnet(t *testing.T, sn awsemulator.Subnet) {
	t.Helper()
	if sn.Zone == "" {
		sn.Zone = "us-west-2d"
	}
	if _, err := e.srv.AddSubnet(sn); err != nil {
		t.Fatal(err)
	}
}

// subnetName names a subnet by its Name tag so expectations read as the seeded account: by
// its id when it has none, and as Name/id when other subnets share the name.
func (e *env) subnetName(id string) string {
	all := e.srv.Subnets()
	name := ""
	for _, sn := range all {
		if sn.ID == id {
			name = sn.Tags["Name"]
		}
	}
	if name == "" {
		return id
	}
	for _, sn := range all {
		if sn.ID != id && sn.Tags["Name"] == name {
			return name + "/" + id
		}
	}
	return name
}

func TestSubnetsFromSeedSelectors(t *testing.T) {
	tests := []struct {
		name  string
		terms string
		setup func(*testing.T, *env)
		// want are Name tags (or ids), most free IPs first.
		want []string
	}{
		{
			name: "line 61: two tags ANDed, ORed with an id",
			terms: `
- tags:
    karpenter.sh/discovery: "${CLUSTER_NAME}"
    environment: test
- id: subnet-09fa4a0a8f233a921`,
			setup: func(t *testing.T, e *env) {
				e.addSubnet(t, awsemulator.Subnet{ID: "subnet-09fa4a0a8f233a921", AvailableIPs: 9000})
			},
			want: []string{"subnet-09fa4a0a8f233a921", "joinery-private-us-west-2a", "joinery-private-us-west-2b"},
		},
		{
			name: "line 509: any value of a tag key",
			terms: `
- tags:
    karpenter.sh/discovery/MyClusterName: '*'`,
			setup: func(t *testing.T, e *env) {
				e.addSubnet(t, awsemulator.Subnet{AvailableIPs: 10, Tags: map[string]string{"Name": "tagged", "karpenter.sh/discovery/MyClusterName": "anything"}})
			},
			want: []string{"tagged"},
		},
		{
			name: "line 516: name and the empty value that means the key exists",
			terms: `
- tags:
    Name: my-subnet
    MyTag: ''`,
			setup: func(t *testing.T, e *env) {
				e.addSubnet(t, awsemulator.Subnet{ID: "subnet-0aaa", AvailableIPs: 10, Tags: map[string]string{"Name": "my-subnet", "MyTag": "x"}})
				e.addSubnet(t, awsemulator.Subnet{ID: "subnet-0bbb", AvailableIPs: 20, Tags: map[string]string{"Name": "my-subnet"}})
			},
			want: []string{"my-subnet/subnet-0aaa"},
		},
		{
			name: "line 524: two tag terms ORed",
			terms: `
- tags:
    Name: "my-subnet-1"
- tags:
    Name: "my-subnet-2"`,
			setup: func(t *testing.T, e *env) {
				e.addSubnet(t, awsemulator.Subnet{AvailableIPs: 10, Tags: map[string]string{"Name": "my-subnet-1"}})
				e.addSubnet(t, awsemulator.Subnet{AvailableIPs: 30, Tags: map[string]string{"Name": "my-subnet-2"}})
				e.addSubnet(t, awsemulator.Subnet{AvailableIPs: 20, Tags: map[string]string{"Name": "my-subnet-3"}})
			},
			want: []string{"my-subnet-2", "my-subnet-1"},
		},
		{
			name: "line 533: wildcard in a tag value",
			terms: `
- tags:
    Name: "*Public*"`,
			want: []string{"joinery-Public-us-west-2b", "joinery-Public-us-west-2a", "joinery-Public-us-west-2c"},
		},
		{
			name: "line 540: ids, one of them unknown",
			terms: `
- id: "subnet-09fa4a0a8f233a921"
- id: "subnet-0471ca205b8a129ae"`,
			setup: func(t *testing.T, e *env) {
				e.addSubnet(t, awsemulator.Subnet{ID: "subnet-0471ca205b8a129ae", AvailableIPs: 5})
			},
			want: []string{"subnet-0471ca205b8a129ae"},
		},
		{
			name: "line 1353: the discovery tag, sorted by free IPs",
			terms: `
- tags:
    karpenter.sh/discovery: "${CLUSTER_NAME}"`,
			want: []string{"joinery-private-us-west-2c", "joinery-private-us-west-2a", "joinery-private-us-west-2b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "1.33")
			if tt.setup != nil {
				tt.setup(t, e)
			}
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{SubnetSelectorTerms: terms[awsv1.SubnetSelectorTerm](t, tt.terms)}}
			got, err := e.resolver.Subnets(context.Background(), nc)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, sn := range got {
				names = append(names, e.subnetName(sn.ID))
				if sn.Zone == "" || sn.ZoneID == "" {
					t.Errorf("subnet %s has zone %q and zone id %q", sn.ID, sn.Zone, sn.ZoneID)
				}
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Errorf("subnets = %v, want %v", names, tt.want)
			}
		})
	}
}

func TestSubnetZoneIDs(t *testing.T) {
	e := newEnv(t, "1.33")
	got, err := e.resolver.Subnets(context.Background(), &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms: []awsv1.SubnetSelectorTerm{{Tags: awsv1.SelectorTags{"Name": "joinery-private-us-west-2b"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// us-west-2b is usw2-az1 in the emulator's zone map.
	if len(got) != 1 || got[0].Zone != "us-west-2b" || got[0].ZoneID != "usw2-az1" {
		t.Errorf("subnet = %+v", got)
	}
}

func TestSecurityGroupsFromSeedSelectors(t *testing.T) {
	tests := []struct {
		name  string
		terms string
		setup func(*testing.T, *env)
		want  []string // group names
	}{
		{
			name: "line 72: tags ANDed, ORed with a name and an id",
			terms: `
- tags:
    karpenter.sh/discovery: "${CLUSTER_NAME}"
    environment: test
- name: my-security-group
- id: sg-063d7acfb4b06c82c`,
			setup: func(t *testing.T, e *env) {
				e.srv.AddSecurityGroup(awsemulator.SecurityGroup{ID: "sg-063d7acfb4b06c82c", Name: "by-id"})
			},
			want: []string{"by-id", "eksctl-joinery-cluster-ClusterSharedNodeSecurityGroup-1W4ZQ7FHJ2Y5", "my-security-group"},
		},
		{
			name: "line 581: the cluster tag",
			terms: `
- tags:
    kubernetes.io/cluster/$CLUSTER_NAME: "owned"`,
			want: []string{"eks-cluster-sg-joinery-1234567890", "eksctl-joinery-cluster-ClusterSharedNodeSecurityGroup-1W4ZQ7FHJ2Y5"},
		},
		{
			name: "line 588: any value of a tag key",
			terms: `
- tags:
    MyTag: '*'`,
			want: []string{"my-security-group"},
		},
		{
			name: "line 595: name and tag ANDed",
			terms: `
- name: my-security-group
  tags:
    MyTag: '*' # matches all resources with the tag`,
			setup: func(t *testing.T, e *env) {
				e.srv.AddSecurityGroup(awsemulator.SecurityGroup{Name: "my-security-group", VPCID: "vpc-other"}) // same name, no tag
			},
			want: []string{"my-security-group"},
		},
		{
			name: "line 603: two Name tag terms",
			terms: `
- tags:
    Name: "my-security-group-1"
- tags:
    Name: "my-security-group-2"`,
			setup: func(t *testing.T, e *env) {
				e.srv.AddSecurityGroup(awsemulator.SecurityGroup{Name: "one", Tags: map[string]string{"Name": "my-security-group-1"}})
				e.srv.AddSecurityGroup(awsemulator.SecurityGroup{Name: "two", Tags: map[string]string{"Name": "my-security-group-2"}})
			},
			want: []string{"one", "two"},
		},
		{
			name: "line 612: wildcard name",
			terms: `
- name: "*Public*"`,
			want: []string{"k8s-elb-Public-web"},
		},
		{
			name: "line 618: ids",
			terms: `
- id: "sg-063d7acfb4b06c82c"
- id: "sg-06e0cf9c198874591"`,
			setup: func(t *testing.T, e *env) {
				e.srv.AddSecurityGroup(awsemulator.SecurityGroup{ID: "sg-063d7acfb4b06c82c", Name: "a"})
				e.srv.AddSecurityGroup(awsemulator.SecurityGroup{ID: "sg-06e0cf9c198874591", Name: "b"})
			},
			want: []string{"a", "b"},
		},
		{
			name: "line 1378: the discovery tag",
			terms: `
- tags:
    karpenter.sh/discovery: "${CLUSTER_NAME}"`,
			want: []string{"eksctl-joinery-cluster-ClusterSharedNodeSecurityGroup-1W4ZQ7FHJ2Y5", "eksctl-joinery-cluster-ControlPlaneSecurityGroup-1AQ073TSAAPW"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "1.33")
			if tt.setup != nil {
				tt.setup(t, e)
			}
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{SecurityGroupSelectorTerms: terms[awsv1.SecurityGroupSelectorTerm](t, tt.terms)}}
			got, err := e.resolver.SecurityGroups(context.Background(), nc)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, sg := range got {
				names = append(names, sg.Name)
			}
			if strings.Join(sortStrings(names), ",") != strings.Join(sortStrings(tt.want), ",") {
				t.Errorf("security groups = %v, want %v", names, tt.want)
			}
		})
	}
}

func sortStrings(in []string) []string { return dedupe(in) }

func TestCapacityReservationsFromSeedSelectors(t *testing.T) {
	tests := []struct {
		name  string
		terms string
		setup func(*testing.T, *env)
		want  []string // "<instance type>/<type>/<state>/<owner>"
	}{
		{
			name: "line 110: tags ORed with an id",
			terms: `
- tags:
    karpenter.sh/discovery: ${CLUSTER_NAME}
- id: cr-123`,
			setup: func(t *testing.T, e *env) {
				e.srv.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-123", InstanceType: "r6i.large", Zone: "us-west-2c"})
			},
			// The discovery-tagged m5.xlarge reservation has expired and is left out.
			want: []string{"m5.large/default/active/" + awsemulator.AccountID, "p5.48xlarge/capacity-block/active/" + awsemulator.AccountID, "r6i.large/default/active/" + awsemulator.AccountID},
		},
		{
			name: "line 786: ids, one unknown",
			terms: `
- id: cr-123
- id: cr-456`,
			setup: func(t *testing.T, e *env) {
				e.srv.AddCapacityReservation(awsemulator.CapacityReservation{ID: "cr-456", InstanceType: "c7g.xlarge", Zone: "us-west-2a", InstanceMatchCriteria: "targeted"})
			},
			want: []string{"c7g.xlarge/default/active/" + awsemulator.AccountID},
		},
		{
			name: "line 793: two tag terms",
			terms: `
- tags:
    key1: foo
    key2: bar
- tags:
    key3: foobar`,
			want: []string{"c6i.2xlarge/default/active/" + awsemulator.AccountID, "m5.large/default/active/" + awsemulator.AccountID},
		},
		{
			name: "line 807: tags narrowed to an owner",
			terms: `
- tags:
    key: foo
  ownerID: "012345678901"`,
			setup: func(t *testing.T, e *env) {
				e.srv.AddCapacityReservation(awsemulator.CapacityReservation{OwnerID: "012345678901", InstanceType: "g6.48xlarge", Zone: "us-west-2a", Tags: map[string]string{"key": "foo"}})
			},
			want: []string{"g6.48xlarge/default/active/012345678901"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "1.33")
			if tt.setup != nil {
				tt.setup(t, e)
			}
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{CapacityReservationSelectorTerms: terms[awsv1.CapacityReservationSelectorTerm](t, tt.terms)}}
			got, err := e.resolver.CapacityReservations(context.Background(), nc)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, cr := range got {
				keys = append(keys, strings.Join([]string{cr.InstanceType, string(cr.ReservationType), string(cr.State), cr.OwnerID}, "/"))
				if cr.AvailabilityZone == "" || cr.InstanceMatchCriteria == "" {
					t.Errorf("reservation %s lacks zone or match criteria: %+v", cr.ID, cr)
				}
			}
			if strings.Join(sortStrings(keys), ",") != strings.Join(sortStrings(tt.want), ",") {
				t.Errorf("reservations = %v, want %v", keys, tt.want)
			}
		})
	}
}

func TestCapacityBlockNearItsEndIsExpiring(t *testing.T) {
	e := newEnv(t, "1.33")
	cr := e.srv.AddCapacityReservation(awsemulator.CapacityReservation{
		InstanceType: "p5.48xlarge", Zone: "us-west-2a", Type: "capacity-block", InstanceMatchCriteria: "targeted",
		EndDate: testNow.Add(30 * time.Minute), Tags: map[string]string{"block": "ending"},
	})
	got, err := e.resolver.CapacityReservations(context.Background(), &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		CapacityReservationSelectorTerms: []awsv1.CapacityReservationSelectorTerm{{Tags: awsv1.SelectorTags{"block": "ending"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != cr.ID || got[0].State != awsv1.CapacityReservationStateExpiring || got[0].EndTime == nil {
		t.Errorf("reservations = %+v, want %s expiring with an end time", got, cr.ID)
	}
}

func errorsAsNoMatch(err error) bool {
	var nm *NoMatchError
	return errors.As(err, &nm)
}

func TestNoSubnetsOrSecurityGroupsMatch(t *testing.T) {
	e := newEnv(t, "1.33")
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: awsv1.SelectorTags{"karpenter.sh/discovery": "no-such-cluster"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Name: "no-such-group"}},
	}}
	if _, err := e.resolver.Subnets(context.Background(), nc); !errorsAsNoMatch(err) || Classify(err).Class != ClassNoMatch {
		t.Errorf("subnets: err = %v, want a NoMatchError", err)
	}
	if _, err := e.resolver.SecurityGroups(context.Background(), nc); !errorsAsNoMatch(err) {
		t.Errorf("security groups: err = %v, want a NoMatchError", err)
	}
}

func TestThrottledThenRecovered(t *testing.T) {
	e := newEnv(t, "1.33")
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{SubnetSelectorTerms: []awsv1.SubnetSelectorTerm{{Tags: awsv1.SelectorTags{"karpenter.sh/discovery": awsemulator.DefaultClusterName}}}}}
	// Three throttled answers use up the SDK's three attempts; the next call gets through.
	e.srv.Inject(awsemulator.Throttling.For(awsemulator.ServiceEC2, "DescribeSubnets", 3))
	_, err := e.resolver.Subnets(context.Background(), nc)
	if c := Classify(err); c.Class != ClassThrottled || c.Code != "RequestLimitExceeded" || !c.Retryable() {
		t.Fatalf("throttled call: err = %v, classified %+v", err, c)
	}
	got, err := e.resolver.Subnets(context.Background(), nc)
	if err != nil || len(got) != 3 {
		t.Fatalf("after recovery: %d subnets, err %v", len(got), err)
	}
	if calls := e.srv.Calls(awsemulator.ServiceEC2, "DescribeSubnets"); calls != 4 {
		t.Errorf("DescribeSubnets calls = %d, want 3 throttled + 1", calls)
	}
}

func TestUnauthorizedIsNotRetryable(t *testing.T) {
	e := newEnv(t, "1.33")
	e.srv.Inject(awsemulator.Unauthorized.For(awsemulator.ServiceEC2, "DescribeSecurityGroups", 0))
	_, err := e.resolver.SecurityGroups(context.Background(), &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Name: "default"}},
	}})
	if c := Classify(err); c.Class != ClassUnauthorized || c.Retryable() || !strings.Contains(err.Error(), "not authorized") {
		t.Errorf("err = %v, classified %+v", err, c)
	}
	if calls := e.srv.Calls(awsemulator.ServiceEC2, "DescribeSecurityGroups"); calls != 1 {
		t.Errorf("calls = %d, want 1 (the SDK does not retry auth failures)", calls)
	}
}

// noBackoff keeps the SDK's retry decisions and attempt count but not its sleeps.
type noBackoff struct{ aws.Retryer }

func (noBackoff) RetryDelay(int, error) (time.Duration, error) { return 0, nil }

func retryDefault() aws.Retryer { return retry.NewStandard() }
