package amifamily

import (
	"fmt"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// family renders and reads one AMI family's user data.
type family interface {
	userData(Input) ([]byte, error)
	parse([]byte) (NodeBootstrap, error)
}

var families = map[string]family{
	awsv1.AMIFamilyAL2:          al2{},
	awsv1.AMIFamilyAL2023:       al2023{},
	awsv1.AMIFamilyBottlerocket: bottlerocket{},
	awsv1.AMIFamilyWindows2019:  windows{},
	awsv1.AMIFamilyWindows2022:  windows{},
	awsv1.AMIFamilyWindows2025:  windows{},
	awsv1.AMIFamilyCustom:       custom{},
}

func lookup(name string) (family, error) {
	f, ok := families[name]
	if !ok {
		return nil, fmt.Errorf("unknown AMI family %q", name)
	}
	return f, nil
}

// Generate renders the user data for a launch: spec.userData merged with joinery's bootstrap by
// the family's rules. The bytes are what EC2 receives before base64 encoding.
func Generate(in Input) ([]byte, error) {
	f, err := lookup(in.Family)
	if err != nil {
		return nil, err
	}
	if in.Family != awsv1.AMIFamilyCustom && in.Cluster.Name == "" {
		return nil, fmt.Errorf("generating %s user data: the cluster name is required", in.Family)
	}
	out, err := f.userData(in)
	if err != nil {
		return nil, fmt.Errorf("generating %s user data: %w", in.Family, err)
	}
	return out, nil
}

// Parse reads user data the way the family's node bootstrap would and reports what its kubelet
// starts with. For Custom it returns ErrCustomUserData.
func Parse(familyName string, userData []byte) (NodeBootstrap, error) {
	f, err := lookup(familyName)
	if err != nil {
		return NodeBootstrap{}, err
	}
	b, err := f.parse(userData)
	if err != nil {
		return NodeBootstrap{}, fmt.Errorf("reading %s user data: %w", familyName, err)
	}
	sortTaints(b.Taints)
	return b, nil
}
