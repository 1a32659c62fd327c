package awsemulator

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Status check categories of DescribeInstanceStatus a test can fail.
const (
	StatusCheckInstance = "instance" // the instance's own reachability check (instanceStatus)
	StatusCheckSystem   = "system"   // the host's reachability check (systemStatus)
)

// ScheduledEvent is an EC2 scheduled event of an instance (DescribeInstanceStatus eventsSet).
type ScheduledEvent struct {
	Code        string // e.g. instance-retirement, system-maintenance
	Description string
	NotBefore   time.Time
}

// instanceHealth is what a test made EC2 report about one instance's status checks.
type instanceHealth struct {
	impairedSince map[string]time.Time // by category
	events        []ScheduledEvent
}

func (l *launchState) healthOf(id string) *instanceHealth {
	if l.health == nil {
		l.health = map[string]*instanceHealth{}
	}
	h, ok := l.health[id]
	if !ok {
		h = &instanceHealth{impairedSince: map[string]time.Time{}}
		l.health[id] = h
	}
	return h
}

// SetStatusCheckFailed makes the instance's status check of category (StatusCheckInstance or
// StatusCheckSystem) report failed, impaired since the given time; a zero time passes it
// again.
func (s *Server) SetStatusCheckFailed(instanceID, category string, impairedSince time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if category != StatusCheckInstance && category != StatusCheckSystem {
		return fmt.Errorf("unknown status check category %q", category)
	}
	if _, ok := s.launch.instances[instanceID]; !ok {
		return fmt.Errorf("no instance %s", instanceID)
	}
	h := s.launch.healthOf(instanceID)
	if impairedSince.IsZero() {
		delete(h.impairedSince, category)
	} else {
		h.impairedSince[category] = impairedSince
	}
	return nil
}

// AddScheduledEvent adds a scheduled event to the instance's status.
func (s *Server) AddScheduledEvent(instanceID string, ev ScheduledEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.launch.instances[instanceID]; !ok {
		return fmt.Errorf("no instance %s", instanceID)
	}
	h := s.launch.healthOf(instanceID)
	h.events = append(h.events, ev)
	return nil
}

type statusDetailXML struct {
	Name          string `xml:"name"`
	Status        string `xml:"status"`
	ImpairedSince string `xml:"impairedSince,omitempty"`
}

type statusSummaryXML struct {
	Status  string            `xml:"status"`
	Details []statusDetailXML `xml:"details>item"`
}

type instanceStatusEventXML struct {
	InstanceEventID string `xml:"instanceEventId"`
	Code            string `xml:"code"`
	Description     string `xml:"description"`
	NotBefore       string `xml:"notBefore"`
}

type instanceStatusXML struct {
	InstanceID       string                   `xml:"instanceId"`
	AvailabilityZone string                   `xml:"availabilityZone"`
	InstanceState    instanceStateXML         `xml:"instanceState"`
	InstanceStatus   statusSummaryXML         `xml:"instanceStatus"`
	SystemStatus     statusSummaryXML         `xml:"systemStatus"`
	Events           []instanceStatusEventXML `xml:"eventsSet>item"`
}

func summary(impairedSince time.Time, impaired bool) statusSummaryXML {
	if !impaired {
		return statusSummaryXML{Status: "ok", Details: []statusDetailXML{{Name: "reachability", Status: "passed"}}}
	}
	return statusSummaryXML{Status: "impaired", Details: []statusDetailXML{{Name: "reachability", Status: "failed", ImpairedSince: formatEC2Time(impairedSince)}}}
}

// describeInstanceStatus answers for running instances (all instances with
// IncludeAllInstances), by InstanceId.N; checks pass unless a test failed them.
func (s *Server) describeInstanceStatus(_ context.Context, q Query) (any, error) {
	l := s.launch
	l.advance(s.resources.now())
	ids := q.List("InstanceId")
	if err := l.checkInstanceIDs(ids); err != nil {
		return nil, err
	}
	selected, err := selectByID(ids, l.instances, func(id string) *APIError { return errInstanceNotFound(id) })
	if err != nil {
		return nil, err
	}
	all := q.Bool("IncludeAllInstances")
	selected = slices.DeleteFunc(selected, func(id string) bool { return !all && l.instances[id].State != InstanceStateRunning })
	pageIDs, next, err := page(selected, q, 5, 1000)
	if err != nil {
		return nil, err
	}
	out := make([]instanceStatusXML, 0, len(pageIDs))
	for _, id := range pageIDs {
		inst := l.instances[id]
		h := l.healthOf(id)
		instSince, instImpaired := h.impairedSince[StatusCheckInstance]
		sysSince, sysImpaired := h.impairedSince[StatusCheckSystem]
		st := instanceStatusXML{
			InstanceID: id, AvailabilityZone: inst.Zone, InstanceState: stateXML(inst.State),
			InstanceStatus: summary(instSince, instImpaired), SystemStatus: summary(sysSince, sysImpaired),
		}
		for i, ev := range h.events {
			st.Events = append(st.Events, instanceStatusEventXML{
				InstanceEventID: fmt.Sprintf("instance-event-%s-%d", id[2:], i), Code: ev.Code, Description: ev.Description, NotBefore: formatEC2Time(ev.NotBefore),
			})
		}
		out = append(out, st)
	}
	return struct {
		Statuses  []instanceStatusXML `xml:"instanceStatusSet>item"`
		NextToken string              `xml:"nextToken,omitempty"`
	}{out, next}, nil
}
