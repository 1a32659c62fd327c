// Package catalog loads the kwok provider's instance types from a JSON file: an embedded,
// generated catalog of EC2-like types by default (see gen/), or any file of the same format.
package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
)

//go:generate go run ./gen -o catalog.json

// defaultCatalog is catalog.json: about 230 EC2-like instance types in the zones test-zone-a to
// test-zone-d, with spot and on-demand offerings.
//
//go:embed catalog.json
var defaultCatalog []byte

// File is the catalog format.
type File struct {
	InstanceTypes []InstanceType `json:"instanceTypes"`
}

// InstanceType describes one type. The labels node.kubernetes.io/instance-type,
// kubernetes.io/arch, kubernetes.io/os, karpenter.k8s.aws/instance-cpu, -memory, -pods, the GPU
// and the accelerator (Neuron) labels are derived from the fields; Labels adds the rest
// (category, family, generation, size, ...).
type InstanceType struct {
	Name string `json:"name"`
	// Arch is amd64 or arm64.
	Arch string `json:"arch"`
	// OperatingSystems a node of the type may run, e.g. [linux windows]; the NodeClaim's
	// requirements pick one (linux when allowed).
	OperatingSystems []string `json:"operatingSystems"`
	// CPU is the number of vCPUs.
	CPU int64 `json:"cpu"`
	// MemoryMiB is the advertised memory; the node reports less (the VM memory overhead).
	MemoryMiB int64 `json:"memoryMiB"`
	// Pods is the default pod density (for EC2, what the ENIs allow).
	Pods int64 `json:"pods"`
	// GPU is set on accelerated types.
	GPU *GPU `json:"gpu,omitempty"`
	// Neuron is set on types with AWS Inferentia or Trainium devices.
	Neuron *Neuron `json:"neuron,omitempty"`
	// PodENI is the number of branch network interfaces the VPC resource controller gives a
	// node for security groups for pods (the vpc.amazonaws.com/pod-eni resource), 0 for none.
	PodENI int64 `json:"podENI,omitempty"`
	// NVMeInstanceStore is the number of NVMe instance store volumes (each takes one of a
	// Nitro type's shared attachment slots, see cloudprovider.EBSVolumeLimit).
	NVMeInstanceStore int32 `json:"nvmeInstanceStore,omitempty"`
	// Labels are further single-valued labels of the type.
	Labels    map[string]string `json:"labels,omitempty"`
	Offerings []Offering        `json:"offerings"`
}

// GPU describes a type's GPUs.
type GPU struct {
	Name         string `json:"name"`
	Manufacturer string `json:"manufacturer"`
	Count        int64  `json:"count"`
	// MemoryMiB is the memory of one GPU.
	MemoryMiB int64 `json:"memoryMiB"`
	// ResourceName is the extended resource the device plugin advertises, e.g. nvidia.com/gpu.
	ResourceName string `json:"resourceName"`
}

// Neuron describes a type's Neuron devices: they are advertised as aws.amazon.com/neuron (one
// per device) and aws.amazon.com/neuroncore (Cores per device), as the AWS Neuron device plugin
// does.
type Neuron struct {
	// Name is the device model, e.g. inferentia2.
	Name  string `json:"name"`
	Count int64  `json:"count"`
	// Cores is the number of NeuronCores of one device.
	Cores int64 `json:"cores"`
}

// Offering is one zone and capacity type a type can be bought in.
type Offering struct {
	Zone string `json:"zone"`
	// CapacityType is spot, on-demand or reserved.
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	// Unavailable marks an offering that never launches, to exercise insufficient capacity.
	Unavailable bool `json:"unavailable,omitempty"`
	// ReservationID and ReservationCapacity describe a reserved offering.
	ReservationID       string `json:"reservationID,omitempty"`
	ReservationCapacity int    `json:"reservationCapacity,omitempty"`
}

// Default returns the embedded catalog.
func Default() (*File, error) {
	return Parse(defaultCatalog)
}

// Load reads a catalog from path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading instance type catalog: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse decodes a catalog, rejecting unknown fields so that a misspelt field is not silently
// ignored.
func Parse(data []byte) (*File, error) {
	var f File
	if err := strictUnmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parsing instance type catalog: %w", err)
	}
	if len(f.InstanceTypes) == 0 {
		return nil, fmt.Errorf("parsing instance type catalog: no instance types")
	}
	return &f, nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
