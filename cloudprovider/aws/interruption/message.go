// Package interruption parses the EventBridge events an interruption queue receives: EC2 spot
// interruption warnings, rebalance recommendations, capacity reservation interruption warnings,
// instance state changes and AWS Health scheduled changes. It knows the events' JSON shapes and nothing about the cluster; the
// controller in cloudprovider/aws/controllers/interruption decides what each kind means for a node.
package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is what a message announces. Its values are the message_type label of Karpenter's
// interruption metrics.
type Kind string

const (
	// SpotInterruption: EC2 reclaims a spot instance in two minutes.
	SpotInterruption Kind = "spot_interrupted"
	// RebalanceRecommendation: a spot instance is at elevated risk of interruption.
	RebalanceRecommendation Kind = "rebalance_recommendation"
	// ScheduledChange: AWS Health announces maintenance or retirement of instances.
	ScheduledChange Kind = "scheduled_change"
	// InstanceStopped: the instance is stopping or stopped.
	InstanceStopped Kind = "instance_stopped"
	// InstanceTerminated: the instance is shutting down or terminated.
	InstanceTerminated Kind = "instance_terminated"
	// CapacityReservationInterrupted: EC2 reclaims an instance running in an interruptible
	// capacity reservation.
	CapacityReservationInterrupted Kind = "capacity_reservation_interrupted"
	// InstanceStatus, SystemStatus and EventStatus are not queue messages: EC2's
	// DescribeInstanceStatus reports them, for an instance whose instance or system
	// reachability check has failed, or that has a scheduled event.
	InstanceStatus Kind = "instance_status"
	SystemStatus   Kind = "system_status"
	EventStatus    Kind = "event_status"
	// NoOp: an event that needs no action, such as an instance entering "running", a health
	// event of another category, or an event type this package does not know.
	NoOp Kind = "no_op"
)

// Kinds lists every Kind, for initialising per-kind metrics.
var Kinds = []Kind{SpotInterruption, RebalanceRecommendation, ScheduledChange, InstanceStopped, InstanceTerminated,
	CapacityReservationInterrupted, InstanceStatus, SystemStatus, EventStatus, NoOp}

// Event sources and detail types, as EventBridge names them.
const (
	SourceEC2    = "aws.ec2"
	SourceHealth = "aws.health"

	DetailTypeSpotInterruption        = "EC2 Spot Instance Interruption Warning"
	DetailTypeRebalanceRecommendation = "EC2 Instance Rebalance Recommendation"
	DetailTypeStateChange             = "EC2 Instance State-change Notification"
	DetailTypeHealth                  = "AWS Health Event"
	// DetailTypeCapacityReservationInterruption is EventBridge's
	// aws.ec2@EC2CapacityReservationInstanceInterruptionWarning.
	DetailTypeCapacityReservationInterruption = "EC2 Capacity Reservation Instance Interruption Warning"
)

// Message is a parsed event.
type Message struct {
	Kind Kind
	// ID is the event's id, for logs.
	ID         string
	Source     string
	DetailType string
	// Time is when the event happened.
	Time time.Time
	// InstanceIDs are the EC2 instances the event is about; empty for NoOp.
	InstanceIDs []string
	// State is the instance's new state for a state-change notification.
	State string
	// EventTypeCode is AWS Health's code for a scheduled change, such as
	// AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED.
	EventTypeCode string
}

// ErrMalformed is wrapped by Parse's errors: the body is not an EventBridge event, or a known
// event lacks what it must carry.
var ErrMalformed = errors.New("malformed interruption message")

type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

type ec2Detail struct {
	InstanceID string `json:"instance-id"`
	State      string `json:"state"`
}

type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCode     string `json:"eventTypeCode"`
	EventTypeCategory string `json:"eventTypeCategory"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// Parse reads an SQS message body. Events of a type it does not act on parse as NoOp; a body
// that is not an event, or a known event without its instance, is an error wrapping
// ErrMalformed.
func Parse(body string) (Message, error) {
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if env.Source == "" || env.DetailType == "" {
		return Message{}, fmt.Errorf("%w: no source or detail-type", ErrMalformed)
	}
	msg := Message{Kind: NoOp, ID: env.ID, Source: env.Source, DetailType: env.DetailType, Time: env.Time}
	switch {
	case env.Source == SourceEC2 && env.DetailType == DetailTypeSpotInterruption:
		return parseEC2(msg, env, SpotInterruption)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeRebalanceRecommendation:
		return parseEC2(msg, env, RebalanceRecommendation)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeCapacityReservationInterruption:
		return parseEC2(msg, env, CapacityReservationInterrupted)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeStateChange:
		return parseEC2(msg, env, NoOp)
	case env.Source == SourceHealth && env.DetailType == DetailTypeHealth:
		return parseHealth(msg, env)
	}
	return msg, nil
}

func parseEC2(msg Message, env envelope, kind Kind) (Message, error) {
	var detail ec2Detail
	if err := json.Unmarshal(env.Detail, &detail); err != nil {
		return Message{}, fmt.Errorf("%w: %s detail: %v", ErrMalformed, env.DetailType, err)
	}
	if !isInstanceID(detail.InstanceID) {
		return Message{}, fmt.Errorf("%w: %s without an instance-id", ErrMalformed, env.DetailType)
	}
	msg.InstanceIDs = []string{detail.InstanceID}
	msg.Kind = kind
	if env.DetailType == DetailTypeStateChange {
		msg.State = detail.State
		msg.Kind = stateKind(detail.State)
	}
	return msg, nil
}

// stateKind maps an instance state to the kind of message it makes: only states on the way out
// of service need action.
func stateKind(state string) Kind {
	switch state {
	case "stopping", "stopped":
		return InstanceStopped
	case "shutting-down", "terminated":
		return InstanceTerminated
	}
	return NoOp
}

func parseHealth(msg Message, env envelope) (Message, error) {
	var detail healthDetail
	if err := json.Unmarshal(env.Detail, &detail); err != nil {
		return Message{}, fmt.Errorf("%w: health detail: %v", ErrMalformed, err)
	}
	msg.EventTypeCode = detail.EventTypeCode
	if detail.Service != "EC2" || detail.EventTypeCategory != "scheduledChange" {
		return msg, nil
	}
	for _, e := range detail.AffectedEntities {
		if isInstanceID(e.EntityValue) {
			msg.InstanceIDs = append(msg.InstanceIDs, e.EntityValue)
		}
	}
	if len(msg.InstanceIDs) > 0 {
		msg.Kind = ScheduledChange // a change to other resources, such as a dedicated host, is a no-op
	}
	return msg, nil
}

func isInstanceID(s string) bool {
	return strings.HasPrefix(s, "i-") && len(s) > len("i-")
}
