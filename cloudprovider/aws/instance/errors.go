package instance

import (
	"errors"
	"fmt"
)

// ErrNotFound means the instance does not exist, or has terminated.
var ErrNotFound = errors.New("instance not found")

// Kind is what a fleet error means for the next launch.
type Kind int

const (
	// KindOther is an error that says nothing about the offering (a bad parameter, say).
	KindOther Kind = iota
	// KindCapacity means the offering (capacity type, instance type, zone) cannot launch now.
	KindCapacity
	// KindSubnetFull means the subnet has no free addresses.
	KindSubnetFull
	// KindSpotUnavailable means the account cannot launch spot at all (the spot service-linked
	// role is missing and may not be created).
	KindSpotUnavailable
	// KindTemplateNotFound means the launch template is gone; it must be recreated.
	KindTemplateNotFound
)

// Fleet error codes and what they mean. The capacity codes are the ones EC2 answers when an
// offering has no room: the pool is out of capacity, or the account's quota for it is spent.
var kinds = map[string]Kind{
	"InsufficientInstanceCapacity":                      KindCapacity,
	"MaxSpotInstanceCountExceeded":                      KindCapacity,
	"VcpuLimitExceeded":                                 KindCapacity,
	"UnfulfillableCapacity":                             KindCapacity,
	"Unsupported":                                       KindCapacity,
	"ReservationCapacityExceeded":                       KindCapacity,
	"InsufficientFreeAddressesInSubnet":                 KindSubnetFull,
	"AuthFailure.ServiceLinkedRoleCreationNotPermitted": KindSpotUnavailable,
	"InvalidLaunchTemplateName.NotFoundException":       KindTemplateNotFound,
	"InvalidLaunchTemplateId.NotFound":                  KindTemplateNotFound,
}

// Classify returns what an EC2 fleet error code means.
func Classify(code string) Kind { return kinds[code] }

// FleetError is one entry of a fleet's error list: the override EC2 could not launch and why.
type FleetError struct {
	TemplateName string
	InstanceType string
	Zone         string
	SubnetID     string
	// CapacityType is joinery's capacity type of the request.
	CapacityType string
	Code         string
	Message      string
}

// Kind classifies the error.
func (e FleetError) Kind() Kind { return Classify(e.Code) }

func (e FleetError) Error() string {
	return fmt.Sprintf("%s %s in %s (%s): %s: %s", e.CapacityType, e.InstanceType, e.Zone, e.SubnetID, e.Code, e.Message)
}

// NoInstanceError is a fleet request that launched nothing for this launch; Errors says why per
// override.
type NoInstanceError struct {
	Errors []FleetError
	// ErrorsShared is set on all members of a batch but one: Errors were handed to every
	// member, and only the member without the flag should record them.
	ErrorsShared bool
}

func (e *NoInstanceError) Error() string {
	if len(e.Errors) == 0 {
		return "fleet launched no instance and reported no error"
	}
	msg := fmt.Sprintf("fleet launched no instance: %d errors, first %s", len(e.Errors), e.Errors[0].Error())
	return msg
}

// Only reports whether every error is of kind k (and there is at least one).
func (e *NoInstanceError) Only(k Kind) bool {
	for _, fe := range e.Errors {
		if fe.Kind() != k {
			return false
		}
	}
	return len(e.Errors) > 0
}

// Has reports whether some error is of kind k.
func (e *NoInstanceError) Has(k Kind) bool {
	for _, fe := range e.Errors {
		if fe.Kind() == k {
			return true
		}
	}
	return false
}
