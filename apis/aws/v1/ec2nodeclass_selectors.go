package v1

// SelectorTags match AWS resources by tag. A value of "*" matches any value and the empty
// string matches every resource that has the key.
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:MaxProperties=20
// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 0)",message="empty tag keys aren't supported"
type SelectorTags map[string]string

// SubnetSelectorTerm selects subnets by tags or by id.
//
// +kubebuilder:validation:XValidation:rule="has(self.tags) || has(self.id)",message="expected at least one, got none, ['tags', 'id']"
// +kubebuilder:validation:XValidation:rule="!(has(self.id) && has(self.tags))",message="'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term"
type SubnetSelectorTerm struct {
	// Tags match subnets that carry all of the given tags.
	// +optional
	Tags SelectorTags `json:"tags,omitempty"`

	// ID is a subnet id.
	// +kubebuilder:validation:Pattern="^subnet-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, name or id.
//
// +kubebuilder:validation:XValidation:rule="has(self.tags) || has(self.id) || has(self.name)",message="expected at least one, got none, ['tags', 'id', 'name']"
// +kubebuilder:validation:XValidation:rule="!(has(self.id) && (has(self.tags) || has(self.name)))",message="'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term"
type SecurityGroupSelectorTerm struct {
	// Tags match security groups that carry all of the given tags.
	// +optional
	Tags SelectorTags `json:"tags,omitempty"`

	// ID is a security group id.
	// +kubebuilder:validation:Pattern="^sg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`

	// Name is a security group name; "*" wildcards are supported.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Name string `json:"name,omitempty"`
}

// AMISelectorTerm selects AMIs by alias, id, SSM parameter, or name/tags/owner.
//
// +kubebuilder:validation:XValidation:rule="has(self.alias) || has(self.tags) || has(self.name) || has(self.id) || has(self.ssmParameter)",message="expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"
// +kubebuilder:validation:XValidation:rule="!(has(self.alias) && (has(self.tags) || has(self.name) || has(self.id) || has(self.owner) || has(self.ssmParameter)))",message="'alias' is mutually exclusive, cannot be set with a combination of other fields in an ami selector term"
// +kubebuilder:validation:XValidation:rule="!(has(self.id) && (has(self.tags) || has(self.name) || has(self.owner) || has(self.ssmParameter)))",message="'id' is mutually exclusive, cannot be set with a combination of other fields in an ami selector term"
// +kubebuilder:validation:XValidation:rule="!(has(self.ssmParameter) && (has(self.tags) || has(self.name) || has(self.owner)))",message="'ssmParameter' is mutually exclusive, cannot be set with a combination of other fields in an ami selector term"
type AMISelectorTerm struct {
	// Alias selects EKS-optimized AMIs as family@version, e.g. al2023@latest or
	// bottlerocket@v1.20.4. Windows families support only "latest".
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+@.+$')",message="'alias' is improperly formatted, must match the format 'family@version'"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') || self.matches('^(al2|al2023|bottlerocket|windows2019|windows2022|windows2025)@')",message="family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') || self.matches('@(latest|v[0-9][0-9A-Za-z._-]*)$')",message="version must be 'latest' or a release tag starting with 'v', e.g. v20240807 or v1.20.4"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('windows') || self.endsWith('@latest')",message="windows families may only specify version 'latest'"
	// +optional
	Alias string `json:"alias,omitempty"`

	// Tags match AMIs that carry all of the given tags.
	// +optional
	Tags SelectorTags `json:"tags,omitempty"`

	// ID is an AMI id.
	// +kubebuilder:validation:Pattern="^ami-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`

	// Name is an AMI name; "*" wildcards are supported.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Name string `json:"name,omitempty"`

	// Owner is an account id or alias ("self", "amazon") owning the AMI. It narrows name and
	// tag matches; with a name and no owner, "self,amazon" is assumed.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Owner string `json:"owner,omitempty"`

	// SSMParameter is the name or ARN of an SSM parameter whose value is an AMI id.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}

// CapacityReservationSelectorTerm selects on-demand capacity reservations by id, or by tags
// optionally narrowed to one owning account.
//
// +kubebuilder:validation:XValidation:rule="has(self.tags) || has(self.id)",message="expected at least one, got none, ['tags', 'id']"
// +kubebuilder:validation:XValidation:rule="!(has(self.id) && (has(self.tags) || has(self.ownerID)))",message="'id' is mutually exclusive, cannot be set with a combination of other fields in a capacity reservation selector term"
type CapacityReservationSelectorTerm struct {
	// Tags match capacity reservations that carry all of the given tags.
	// +optional
	Tags SelectorTags `json:"tags,omitempty"`

	// ID is a capacity reservation id.
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`

	// OwnerID is the 12-digit account id that owns the selected reservations.
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
}

// PlacementGroupSelector selects one placement group by name or by id. The group must exist:
// joinery neither creates nor deletes placement groups.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) != has(self.id)",message="expected exactly one of ['name', 'id']"
type PlacementGroupSelector struct {
	// Name is the placement group's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Name string `json:"name,omitempty"`

	// ID is the placement group's id; a group shared from another account is selected by id.
	// +kubebuilder:validation:Pattern="^pg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
}
