package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// MetadataOptions configure the instance metadata service (IMDS). The defaults require IMDSv2
// tokens and a hop limit of 1, which keeps containers off the host network away from IMDS.
type MetadataOptions struct {
	// HTTPEndpoint enables or disables the IMDS HTTP endpoint.
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`

	// HTTPProtocolIPv6 enables or disables the IMDS IPv6 endpoint.
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`

	// HTTPPutResponseHopLimit is the hop limit of IMDS token responses.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`

	// HTTPTokens says whether IMDSv2 session tokens are required or optional.
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum:={required,optional}
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping attaches one EBS volume to launched instances.
type BlockDeviceMapping struct {
	// DeviceName is the device the volume is exposed as, e.g. /dev/xvda.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	DeviceName *string `json:"deviceName"`

	// EBS describes the volume.
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`

	// RootVolume marks the volume the node's root filesystem lives on, whose size is used
	// for ephemeral-storage. At most one mapping may set it.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice is an EBS volume's configuration.
type BlockDevice struct {
	// DeleteOnTermination deletes the volume when the instance terminates.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`

	// Encrypted encrypts the volume.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`

	// IOPS is the provisioned I/O operations per second (io1, io2, gp3).
	// +kubebuilder:validation:Minimum=0
	// +optional
	IOPS *int64 `json:"iops,omitempty"`

	// KMSKeyID is the KMS key that encrypts the volume.
	// +kubebuilder:validation:MinLength=1
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`

	// SnapshotID is the snapshot the volume is created from.
	// +kubebuilder:validation:Pattern="^snap-[0-9a-z]+$"
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`

	// Throughput is the provisioned throughput in MiB/s (gp3).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`

	// VolumeInitializationRate is the rate, in MiB/s, at which a volume created from a
	// snapshot is initialized.
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`

	// VolumeSize is the size of the volume, e.g. 100Gi; EBS allows at most 64Ti.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="type(self) == string ? isQuantity(self) && quantity(self).isGreaterThan(quantity('0')) && quantity(self).compareTo(quantity('64Ti')) <= 0 : self > 0 && self <= 70368744177664",message="volumeSize must be greater than 0 and at most 64Ti"
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`

	// VolumeType is the EBS volume type.
	// +kubebuilder:validation:Enum:={standard,io1,io2,gp2,sc1,st1,gp3}
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}
