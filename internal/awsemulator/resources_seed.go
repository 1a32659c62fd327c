package awsemulator

import (
	"fmt"
	"strings"
	"time"
)

// seedResources fills a new region with what a typical EKS cluster account holds: the
// cluster's VPC with a private and a public subnet in three zones, the default VPC, the
// cluster's security groups, capacity reservations, the node role and instance profile, a few
// of the account's own images and every EKS-optimized AMI with its SSM parameters.
func (r *resourceState) seedResources(region string, zones []Zone, started time.Time) {
	cluster := DefaultClusterName
	discovery := map[string]string{"karpenter.sh/discovery": cluster}
	withDiscovery := func(extra map[string]string) map[string]string {
		tags := cloneTags(discovery)
		for k, v := range extra {
			tags[k] = v
		}
		return tags
	}

	clusterVPC := &VPC{ID: resourceID("vpc", region+"/cluster"), CIDR: "10.0.0.0/16", Tags: map[string]string{"Name": cluster + "-vpc"}}
	defaultVPC := &VPC{ID: resourceID("vpc", region+"/default"), CIDR: "172.31.0.0/16", Tags: map[string]string{}}
	r.vpcs[clusterVPC.ID] = clusterVPC
	r.vpcs[defaultVPC.ID] = defaultVPC

	// Free IPs differ per subnet so that ordering by free IPs is visible.
	privateFree := []int32{8110, 7954, 8175, 8060}
	publicFree := []int32{4051, 4090, 3987, 4072}
	for i, z := range zones {
		if i < 3 {
			env := "test"
			if i == 2 {
				env = "prod"
			}
			r.addSubnet(Subnet{
				VPCID: clusterVPC.ID, Zone: z.Name, CIDR: fmt.Sprintf("10.0.%d.0/19", i*32), AvailableIPs: privateFree[i],
				Tags: withDiscovery(map[string]string{
					"Name": fmt.Sprintf("%s-private-%s", cluster, z.Name), "environment": env,
					"kubernetes.io/role/internal-elb": "1", "kubernetes.io/cluster/" + cluster: "shared",
				}),
			}, region+"/private/"+z.Name)
			r.addSubnet(Subnet{
				VPCID: clusterVPC.ID, Zone: z.Name, CIDR: fmt.Sprintf("10.0.%d.0/20", 96+i*16), AvailableIPs: publicFree[i], MapPublicIPOnLaunch: true,
				Tags: map[string]string{
					"Name": fmt.Sprintf("%s-Public-%s", cluster, z.Name), "kubernetes.io/role/elb": "1", "kubernetes.io/cluster/" + cluster: "shared",
				},
			}, region+"/public/"+z.Name)
		}
		r.addSubnet(Subnet{
			VPCID: defaultVPC.ID, Zone: z.Name, CIDR: fmt.Sprintf("172.31.%d.0/20", i*16), AvailableIPs: 4091, MapPublicIPOnLaunch: true,
		}, region+"/default/"+z.Name)
	}

	for _, sg := range []SecurityGroup{
		{Name: "eksctl-" + cluster + "-cluster-ClusterSharedNodeSecurityGroup-1W4ZQ7FHJ2Y5", Description: "Communication between all nodes in the cluster",
			Tags: withDiscovery(map[string]string{"Name": cluster + "-shared-node", "environment": "test", "kubernetes.io/cluster/" + cluster: "owned"})},
		{Name: "eks-cluster-sg-" + cluster + "-1234567890", Description: "EKS created security group applied to ENI that is attached to EKS Control Plane master nodes, as well as any managed workloads.",
			Tags: map[string]string{"Name": "eks-cluster-sg-" + cluster + "-1234567890", "aws:eks:cluster-name": cluster, "kubernetes.io/cluster/" + cluster: "owned"}},
		{Name: "eksctl-" + cluster + "-cluster-ControlPlaneSecurityGroup-1AQ073TSAAPW", Description: "Communication between the control plane and worker nodegroups",
			Tags: withDiscovery(map[string]string{"Name": cluster + "-control-plane"})},
		{Name: "my-security-group", Description: "application traffic", Tags: map[string]string{"MyTag": "app"}},
		{Name: "k8s-elb-Public-web", Description: "public load balancer", Tags: map[string]string{"elbv2.k8s.aws/cluster": cluster}},
		{Name: "default", Description: "default VPC security group"},
	} {
		sg.VPCID = clusterVPC.ID
		r.addSecurityGroup(sg, region+"/"+sg.Name)
	}
	r.addSecurityGroup(SecurityGroup{Name: "default", Description: "default VPC security group", VPCID: defaultVPC.ID}, region+"/default-vpc/default")

	zone := func(i int) string { return zones[i%len(zones)].Name }
	for _, cr := range []CapacityReservation{
		{OwnerID: AccountID, InstanceType: "m5.large", Zone: zone(0), InstanceMatchCriteria: "open", TotalInstances: 10, AvailableInstances: 10,
			Tags: withDiscovery(map[string]string{"key1": "foo", "key2": "bar"})},
		{OwnerID: AccountID, InstanceType: "c6i.2xlarge", Zone: zone(1), InstanceMatchCriteria: "targeted", TotalInstances: 4, AvailableInstances: 3,
			Tags: map[string]string{"key3": "foobar"}},
		{OwnerID: AccountID, InstanceType: "p5.48xlarge", Zone: zone(1), Type: "capacity-block", InstanceMatchCriteria: "targeted", TotalInstances: 2, AvailableInstances: 2,
			StartDate: started.Add(-time.Hour), EndDate: started.Add(71 * time.Hour), Tags: withDiscovery(nil)},
		{OwnerID: OtherAccountID, InstanceType: "g6.48xlarge", Zone: zone(2), InstanceMatchCriteria: "open", TotalInstances: 2, AvailableInstances: 1,
			Tags: map[string]string{"key": "foo"}},
		{OwnerID: AccountID, InstanceType: "m5.xlarge", Zone: zone(0), State: "expired", InstanceMatchCriteria: "open", TotalInstances: 1,
			EndDate: started.Add(-24 * time.Hour), Tags: withDiscovery(nil)},
	} {
		r.addCapacityReservation(cr, region+"/"+cr.InstanceType+"/"+cr.OwnerID)
	}

	nodeRole := "KarpenterNodeRole-" + cluster
	r.addRole(nodeRole, started)
	r.instanceProfiles["KarpenterNodeInstanceProfile-"+cluster] = &InstanceProfile{
		Name: "KarpenterNodeInstanceProfile-" + cluster, ID: iamID("AIPA", "KarpenterNodeInstanceProfile-"+cluster), Path: "/",
		CreateDate: started, Roles: []string{nodeRole}, Tags: map[string]string{},
	}

	r.seedEKSImages()
	for _, img := range []Image{
		{Name: "custom-ami-amd64", Architecture: "x86_64", CreationDate: day(2026, 5, 4), Tags: withDiscovery(map[string]string{"environment": "test"})},
		{Name: "custom-ami-amd64", Architecture: "x86_64", CreationDate: day(2026, 2, 2), Tags: withDiscovery(map[string]string{"environment": "test"})},
		{Name: "custom-ami-arm64", Architecture: "arm64", CreationDate: day(2026, 5, 4), Tags: withDiscovery(map[string]string{"environment": "test"})},
		{Name: "my-ami", Architecture: "x86_64", CreationDate: day(2026, 3, 1), Tags: map[string]string{"Name": "my-ami"}},
		{Name: "legacy-ami", Architecture: "x86_64", CreationDate: day(2019, 1, 1), DeprecationTime: day(2021, 1, 1), Tags: map[string]string{"team": "legacy"}},
	} {
		img.OwnerID = AccountID
		r.addImage(img, img.Name+img.CreationDate.String())
	}
	// Another account shares a public image with a name the account also uses.
	r.addImage(Image{Name: "my-ami", Architecture: "arm64", OwnerID: OtherAccountID, Public: true, CreationDate: day(2026, 9, 9)}, "other/my-ami")

	customAMI := ""
	for id, img := range r.images {
		if img.Name == "custom-ami-amd64" && img.CreationDate.Equal(day(2026, 5, 4)) {
			customAMI = id
		}
	}
	r.putParameter("my-custom-parameter", customAMI, "aws:ec2:image", started)
}

func (r *resourceState) addSubnet(sn Subnet, seed string) *Subnet {
	if sn.ID == "" {
		sn.ID = resourceID("subnet", seed)
	}
	sn.Tags = cloneTags(sn.Tags)
	r.subnets[sn.ID] = &sn
	return &sn
}

func (r *resourceState) addSecurityGroup(sg SecurityGroup, seed string) *SecurityGroup {
	if sg.ID == "" {
		sg.ID = resourceID("sg", seed)
	}
	sg.Tags = cloneTags(sg.Tags)
	r.securityGroups[sg.ID] = &sg
	return &sg
}

func (r *resourceState) addImage(img Image, seed string) *Image {
	if img.ID == "" {
		img.ID = resourceID("ami", seed)
	}
	img.Tags = cloneTags(img.Tags)
	r.images[img.ID] = &img
	return &img
}

func (r *resourceState) addCapacityReservation(cr CapacityReservation, seed string) *CapacityReservation {
	if cr.ID == "" {
		cr.ID = resourceID("cr", seed)
	}
	if cr.Type == "" {
		cr.Type = "default"
	}
	if cr.State == "" {
		cr.State = "active"
	}
	if cr.InstanceMatchCriteria == "" {
		cr.InstanceMatchCriteria = "open"
	}
	if cr.InstancePlatform == "" {
		cr.InstancePlatform = "Linux/UNIX"
	}
	if cr.StartDate.IsZero() {
		cr.StartDate = day(2026, 1, 1)
	}
	cr.Tags = cloneTags(cr.Tags)
	r.reservations[cr.ID] = &cr
	return &cr
}

func (r *resourceState) addRole(name string, created time.Time) *Role {
	role := &Role{Name: name, ID: iamID("AROA", name), Path: "/", CreateDate: created, Tags: map[string]string{}}
	r.roles[name] = role
	return role
}

func (r *resourceState) putParameter(name, value, dataType string, modified time.Time) {
	p, ok := r.parameters[name]
	if !ok {
		p = &Parameter{Name: name, Type: "String"}
		r.parameters[name] = p
	}
	p.Value, p.DataType, p.LastModified = value, dataType, modified
	p.Version++
}

// iamID is a stable IAM unique id: a four-letter prefix naming the kind and 17 characters.
func iamID(prefix, seed string) string {
	id := resourceID("x", seed)[2:]
	return prefix + strings.ToUpper(id)
}
