package cloudprovider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DRA driver names a node's device drivers publish ResourceSlices under.
const (
	// NVIDIAGPUDriver is the driver name of NVIDIA's DRA driver for GPUs.
	NVIDIAGPUDriver = "gpu.nvidia.com"
	// AMDGPUDriver is the driver name of AMD's DRA driver for GPUs.
	AMDGPUDriver = "gpu.amd.com"
	// NeuronDriver is the driver name of the AWS Neuron DRA driver.
	NeuronDriver = "neuron.aws.com"
)

// DeviceSet is a number of identical devices that one DRA driver of a node publishes in the
// node's ResourceSlice: what a hypothetical node of the type offers DynamicResources.
type DeviceSet struct {
	Driver string `json:"driver"`
	// Model is the device model as the provider names it (the productName attribute).
	Model string `json:"model"`
	Count int64  `json:"count"`
	// MemoryMiB is the memory of one device; 0 when unknown.
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
}

// DevicesAnnotationKey is the NodeOverlay annotation that replaces the devices of the instance
// types the overlay matches: a JSON list of device sets,
// [{"driver":"gpu.nvidia.com","model":"a10g","count":1,"memoryMiB":24576}], where [] means
// the types publish none. It is an annotation, not a spec field, so that the manifest stays
// one Karpenter accepts (Karpenter ignores it).
const DevicesAnnotationKey = "joinery.dev/devices"

// ParseDevices parses the value of DevicesAnnotationKey. Unknown fields are refused, so that a
// misspelt key is an error rather than a device set without it.
func ParseDevices(value string) ([]DeviceSet, error) {
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	var sets []DeviceSet
	if err := dec.Decode(&sets); err != nil {
		return nil, fmt.Errorf("want a JSON list of {driver, model, count, memoryMiB}: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("want a single JSON list, found more after it")
	}
	if sets == nil {
		return nil, errors.New("want a JSON list of {driver, model, count, memoryMiB}, got null")
	}
	for i, s := range sets {
		switch {
		case s.Driver == "":
			return nil, fmt.Errorf("[%d]: driver is empty", i)
		case s.Count <= 0:
			return nil, fmt.Errorf("[%d]: count %d is not positive", i, s.Count)
		case s.MemoryMiB < 0:
			return nil, fmt.Errorf("[%d]: memoryMiB %d is negative", i, s.MemoryMiB)
		}
	}
	return sets, nil
}

// DevicesKey identifies the devices of sets, for grouping types that publish the same slices.
func DevicesKey(sets []DeviceSet) string {
	var b strings.Builder
	for _, s := range sets {
		fmt.Fprintf(&b, "%s/%s/%d/%d;", s.Driver, s.Model, s.Count, s.MemoryMiB)
	}
	return b.String()
}

// AcceleratorLabels names the well-known labels a provider describes a type's GPUs and other
// accelerators with.
type AcceleratorLabels struct {
	GPUName, GPUManufacturer, GPUCount, GPUMemory string
	AcceleratorName, AcceleratorManufacturer      string
	AcceleratorCount                              string
}

// DevicesFromLabels predicts the devices a node of a type with labels publishes through DRA:
// its GPUs under their manufacturer's driver and its AWS accelerators (Neuron) under the
// Neuron driver. A manufacturer without a known DRA driver publishes nothing.
func DevicesFromLabels(labels map[string]string, keys AcceleratorLabels) []DeviceSet {
	var sets []DeviceSet
	if count, _ := strconv.ParseInt(labels[keys.GPUCount], 10, 64); count > 0 {
		driver := ""
		switch labels[keys.GPUManufacturer] {
		case "nvidia":
			driver = NVIDIAGPUDriver
		case "amd":
			driver = AMDGPUDriver
		}
		if driver != "" {
			mem, _ := strconv.ParseInt(labels[keys.GPUMemory], 10, 64)
			sets = append(sets, DeviceSet{Driver: driver, Model: labels[keys.GPUName], Count: count, MemoryMiB: mem})
		}
	}
	if count, _ := strconv.ParseInt(labels[keys.AcceleratorCount], 10, 64); count > 0 && labels[keys.AcceleratorManufacturer] == "aws" {
		sets = append(sets, DeviceSet{Driver: NeuronDriver, Model: labels[keys.AcceleratorName], Count: count})
	}
	return sets
}
