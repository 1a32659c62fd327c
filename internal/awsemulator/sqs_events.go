package awsemulator

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"
)

// The builders below return message bodies as an EventBridge rule with an SQS target delivers
// them: the event itself, as JSON, with AWS's envelope (version, id, detail-type, source,
// account, time, region, resources, detail). Send them with SendEvent.

// EC2 instance states a state-change notification can report beyond those launch.go names
// (instances in the emulator are never stopped, but a test may say they are).
const (
	InstanceStateStopping = "stopping"
	InstanceStateStopped  = "stopped"
)

type eventEnvelope struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Account    string   `json:"account"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     any      `json:"detail"`
}

// eventSeq numbers events so each has its own id.
var eventSeq atomic.Int64

func event(region, detailType, source string, resources []string, detail any) string {
	id := fmt.Sprintf("7bf73129-1428-4cd3-a780-%012d", eventSeq.Add(1))
	body, err := json.Marshal(eventEnvelope{
		Version: "0", ID: id, DetailType: detailType, Source: source, Account: AccountID,
		Time: time.Now().UTC().Format(time.RFC3339), Region: region, Resources: resources, Detail: detail,
	})
	if err != nil {
		panic(fmt.Sprintf("awsemulator: encoding a %s event: %v", detailType, err)) // fixed shapes of strings; cannot fail
	}
	return string(body)
}

func instanceARN(region, instanceID string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", region, AccountID, instanceID)
}

// The Server methods build events in the server's region; the functions of the same name with
// an Event suffix take the region, for tests that talk to an emulator in another process.

// SpotInterruptionWarning is the "EC2 Spot Instance Interruption Warning" EC2 sends two minutes
// before it reclaims a spot instance.
func (s *Server) SpotInterruptionWarning(instanceID string) string {
	return SpotInterruptionWarningEvent(s.Region, instanceID)
}

// RebalanceRecommendation is the "EC2 Instance Rebalance Recommendation" EC2 sends when a spot
// instance is at elevated risk of interruption.
func (s *Server) RebalanceRecommendation(instanceID string) string {
	return RebalanceRecommendationEvent(s.Region, instanceID)
}

// InstanceStateChange is the "EC2 Instance State-change Notification" for an instance entering
// state.
func (s *Server) InstanceStateChange(instanceID, state string) string {
	return InstanceStateChangeEvent(s.Region, instanceID, state)
}

// ScheduledChange is the AWS Health "scheduledChange" event for EC2 maintenance (a scheduled
// retirement) affecting instanceIDs.
func (s *Server) ScheduledChange(instanceIDs ...string) string {
	return ScheduledChangeEvent(s.Region, instanceIDs...)
}

// SpotInterruptionWarningEvent is the "EC2 Spot Instance Interruption Warning" EC2 sends two minutes
// before it reclaims a spot instance.
func SpotInterruptionWarningEvent(region, instanceID string) string {
	return event(region, "EC2 Spot Instance Interruption Warning", "aws.ec2", []string{instanceARN(region, instanceID)}, map[string]string{
		"instance-id":     instanceID,
		"instance-action": "terminate",
	})
}

// RebalanceRecommendationEvent is the "EC2 Instance Rebalance Recommendation" EC2 sends when a spot
// instance is at elevated risk of interruption.
func RebalanceRecommendationEvent(region, instanceID string) string {
	return event(region, "EC2 Instance Rebalance Recommendation", "aws.ec2", []string{instanceARN(region, instanceID)}, map[string]string{
		"instance-id": instanceID,
	})
}

// InstanceStateChangeEvent is the "EC2 Instance State-change Notification" for an instance entering
// state (one of the InstanceState constants).
func InstanceStateChangeEvent(region, instanceID, state string) string {
	return event(region, "EC2 Instance State-change Notification", "aws.ec2", []string{instanceARN(region, instanceID)}, map[string]string{
		"instance-id": instanceID,
		"state":       state,
	})
}

// ScheduledChangeEvent is the AWS Health "scheduledChange" event for EC2 maintenance (a scheduled
// retirement) affecting instanceIDs.
func ScheduledChangeEvent(region string, instanceIDs ...string) string {
	type description struct {
		Language          string `json:"language"`
		LatestDescription string `json:"latestDescription"`
	}
	type entity struct {
		EntityValue string `json:"entityValue"`
	}
	start := time.Now().UTC().Add(14 * 24 * time.Hour)
	resources := make([]string, 0, len(instanceIDs))
	entities := make([]entity, 0, len(instanceIDs))
	for _, id := range instanceIDs {
		resources = append(resources, id)
		entities = append(entities, entity{EntityValue: id})
	}
	const code = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
	detail := struct {
		EventARN          string        `json:"eventArn"`
		Service           string        `json:"service"`
		EventTypeCode     string        `json:"eventTypeCode"`
		EventTypeCategory string        `json:"eventTypeCategory"`
		StartTime         string        `json:"startTime"`
		EndTime           string        `json:"endTime"`
		EventDescription  []description `json:"eventDescription"`
		AffectedEntities  []entity      `json:"affectedEntities"`
	}{
		EventARN:          fmt.Sprintf("arn:aws:health:%s::event/EC2/%s/%s_%d", region, code, code, start.Unix()),
		Service:           "EC2",
		EventTypeCode:     code,
		EventTypeCategory: "scheduledChange",
		StartTime:         start.Format(time.RFC1123),
		EndTime:           start.Add(time.Hour).Format(time.RFC1123),
		EventDescription: []description{{
			Language:          "en_US",
			LatestDescription: "EC2 has detected degradation of the underlying hardware hosting your Amazon EC2 instance. Your instance is scheduled for retirement.",
		}},
		AffectedEntities: entities,
	}
	return event(region, "AWS Health Event", "aws.health", resources, detail)
}

// CapacityReservationInterruption is the "EC2 Capacity Reservation Instance Interruption
// Warning" EC2 sends before it reclaims an instance of an interruptible capacity reservation.
func (s *Server) CapacityReservationInterruption(instanceID string) string {
	return CapacityReservationInterruptionEvent(s.Region, instanceID)
}

// CapacityReservationInterruptionEvent is the "EC2 Capacity Reservation Instance Interruption
// Warning" EC2 sends before it reclaims an instance of an interruptible capacity reservation.
func CapacityReservationInterruptionEvent(region, instanceID string) string {
	return event(region, "EC2 Capacity Reservation Instance Interruption Warning", "aws.ec2", []string{instanceARN(region, instanceID)}, map[string]string{
		"instance-id":     instanceID,
		"instance-action": "terminate",
	})
}
