package awsemulator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// PlacementGroup is an emulated EC2 placement group.
type PlacementGroup struct {
	ID             string
	Name           string
	Strategy       string // cluster, partition or spread
	PartitionCount int32  // partition groups only
	SpreadLevel    string // spread groups only: rack (the default) or host
	State          string // available when empty
	Tags           map[string]string
}

// Placement is where in a placement group an instance runs.
type Placement struct {
	GroupID   string
	GroupName string
	// PartitionNumber is the instance's partition in a partition group (1-based), 0 otherwise.
	PartitionNumber int32
}

// maxPartitions is EC2's limit of partitions per group (per zone).
const maxPartitions = 7

func (s *Server) registerPlacementGroups() {
	s.handleQuery(ServiceEC2, "CreatePlacementGroup", s.createPlacementGroup)
	s.handleQuery(ServiceEC2, "DescribePlacementGroups", s.describePlacementGroups)
	s.handleQuery(ServiceEC2, "DeletePlacementGroup", s.deletePlacementGroup)
}

func (r *resourceState) groups() map[string]*PlacementGroup {
	if r.placementGroups == nil {
		r.placementGroups = map[string]*PlacementGroup{}
	}
	return r.placementGroups
}

// placementGroupByName finds a group by name; names are unique in an account.
func (r *resourceState) placementGroupByName(name string) (*PlacementGroup, bool) {
	for _, pg := range r.groups() {
		if pg.Name == name {
			return pg, true
		}
	}
	return nil, false
}

func unknownPlacementGroup(what string) *APIError {
	return &APIError{Code: "InvalidPlacementGroup.Unknown", Message: fmt.Sprintf("The Placement Group '%s' is unknown.", what)}
}

// addPlacementGroup validates and stores pg, giving it an id.
func (r *resourceState) addPlacementGroup(pg PlacementGroup) (*PlacementGroup, error) {
	if pg.Name == "" {
		return nil, errMissingParameter("GroupName")
	}
	if _, taken := r.placementGroupByName(pg.Name); taken {
		return nil, &APIError{Code: "InvalidPlacementGroup.Duplicate", Message: fmt.Sprintf("The Placement Group '%s' already exists.", pg.Name)}
	}
	switch pg.Strategy {
	case "cluster", "spread":
		if pg.PartitionCount != 0 {
			return nil, errInvalidParameter("PartitionCount is only valid for the partition strategy")
		}
		if pg.Strategy == "spread" && pg.SpreadLevel == "" {
			pg.SpreadLevel = "rack"
		}
	case "partition":
		if pg.PartitionCount == 0 {
			pg.PartitionCount = 2 // EC2's default
		}
		if pg.PartitionCount < 1 || pg.PartitionCount > maxPartitions {
			return nil, errInvalidParameter("The partition count must be between 1 and %d", maxPartitions)
		}
	default:
		return nil, errInvalidParameter("The strategy '%s' is not valid", pg.Strategy)
	}
	if pg.State == "" {
		pg.State = "available"
	}
	pg.ID = resourceID("pg", "placement-group/"+pg.Name)
	pg.Tags = cloneTags(pg.Tags)
	stored := pg
	r.groups()[pg.ID] = &stored
	return &stored, nil
}

func (s *Server) createPlacementGroup(_ context.Context, q Query) (any, error) {
	partitions, err := q.Int("PartitionCount", 0)
	if err != nil {
		return nil, err
	}
	pg := PlacementGroup{Name: q.Get("GroupName"), Strategy: q.Get("Strategy"), PartitionCount: int32(partitions), SpreadLevel: q.Get("SpreadLevel")}
	for _, spec := range q.Members("TagSpecification") {
		if spec.Get("ResourceType") == "placement-group" {
			pg.Tags = spec.Tags("Tag")
		}
	}
	stored, err := s.resources.addPlacementGroup(pg)
	if err != nil {
		return nil, err
	}
	return struct {
		PlacementGroup placementGroupXML `xml:"placementGroup"`
	}{s.placementGroupInfo(stored)}, nil
}

type placementGroupXML struct {
	GroupName      string   `xml:"groupName"`
	GroupID        string   `xml:"groupId"`
	GroupArn       string   `xml:"groupArn"`
	State          string   `xml:"state"`
	Strategy       string   `xml:"strategy"`
	PartitionCount int32    `xml:"partitionCount,omitempty"`
	SpreadLevel    string   `xml:"spreadLevel,omitempty"`
	Tags           []tagXML `xml:"tagSet>item"`
}

func (s *Server) placementGroupInfo(pg *PlacementGroup) placementGroupXML {
	return placementGroupXML{
		GroupName: pg.Name, GroupID: pg.ID, GroupArn: fmt.Sprintf("arn:aws:ec2:%s:%s:placement-group/%s", s.Region, AccountID, pg.Name),
		State: pg.State, Strategy: pg.Strategy, PartitionCount: pg.PartitionCount, SpreadLevel: pg.SpreadLevel, Tags: tagSet(pg.Tags),
	}
}

// describePlacementGroups answers by GroupName.N or GroupId.N (an unknown one fails the call,
// as EC2's does) and the filters group-name, group-arn, state, strategy, partition-count,
// spread-level and tags.
func (s *Server) describePlacementGroups(_ context.Context, q Query) (any, error) {
	r := s.resources
	ids, err := selectByID(q.List("GroupId"), r.groups(), func(id string) *APIError { return unknownPlacementGroup(id) })
	if err != nil {
		return nil, err
	}
	if names := q.List("GroupName"); len(names) > 0 {
		ids = ids[:0]
		for _, name := range names {
			pg, ok := r.placementGroupByName(name)
			if !ok {
				return nil, unknownPlacementGroup(name)
			}
			ids = append(ids, pg.ID)
		}
	}
	matched, err := filterIDs(ids, func(id string) (bool, error) {
		pg := r.groups()[id]
		return matchFilters(q.Filters(), pg.Tags, true, func(name string) ([]string, bool) {
			switch name {
			case "group-name":
				return []string{pg.Name}, true
			case "group-arn":
				return []string{s.placementGroupInfo(pg).GroupArn}, true
			case "state":
				return []string{pg.State}, true
			case "strategy":
				return []string{pg.Strategy}, true
			case "partition-count":
				return []string{fmt.Sprint(pg.PartitionCount)}, true
			case "spread-level":
				return []string{pg.SpreadLevel}, true
			}
			return nil, false
		})
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(matched)
	out := make([]placementGroupXML, 0, len(matched))
	for _, id := range slices.Compact(matched) {
		out = append(out, s.placementGroupInfo(r.groups()[id]))
	}
	slices.SortFunc(out, func(a, b placementGroupXML) int { return strings.Compare(a.GroupName, b.GroupName) }) // by name, as a reader expects
	return struct {
		PlacementGroups []placementGroupXML `xml:"placementGroupSet>item"`
	}{out}, nil
}

// deletePlacementGroup refuses a group that still holds instances, as EC2 does.
func (s *Server) deletePlacementGroup(_ context.Context, q Query) (any, error) {
	pg, ok := s.resources.placementGroupByName(q.Get("GroupName"))
	if !ok {
		return nil, unknownPlacementGroup(q.Get("GroupName"))
	}
	for _, inst := range s.launch.instances {
		if inst.Placement.GroupID == pg.ID && inst.State != InstanceStateTerminated {
			return nil, &APIError{Code: "InvalidPlacementGroup.InUse", Message: fmt.Sprintf("The placement group '%s' is in use and may not be deleted.", pg.Name)}
		}
	}
	delete(s.resources.groups(), pg.ID)
	return struct {
		Return bool `xml:"return"`
	}{true}, nil
}

// templatePlacementGroup is the group a launch template names, by id or name; nil when it names
// none. An unknown or unavailable group is the error EC2 reports for the pool.
func (s *Server) templatePlacementGroup(lt *LaunchTemplate) (*PlacementGroup, *APIError) {
	d := lt.Data
	if d.PlacementGroupID == "" && d.PlacementGroupName == "" {
		return nil, nil
	}
	pg, ok := s.resources.groups()[d.PlacementGroupID]
	if d.PlacementGroupID == "" {
		pg, ok = s.resources.placementGroupByName(d.PlacementGroupName)
	}
	if !ok {
		return nil, unknownPlacementGroup(d.PlacementGroupID + d.PlacementGroupName)
	}
	if pg.State != "available" {
		return nil, &APIError{Code: "InvalidPlacementGroup.Unknown", Message: fmt.Sprintf("The Placement Group '%s' is not available.", pg.Name)}
	}
	return pg, nil
}

// place puts a new instance into the template's placement group: in the partition the template
// names, or else the partition with the fewest running instances (EC2 spreads them evenly).
func (s *Server) place(inst *Instance, lt *LaunchTemplate) {
	pg, apiErr := s.templatePlacementGroup(lt)
	if pg == nil || apiErr != nil {
		return
	}
	inst.Placement = Placement{GroupID: pg.ID, GroupName: pg.Name}
	if pg.Strategy != "partition" {
		return
	}
	if n := lt.Data.PartitionNumber; n > 0 {
		inst.Placement.PartitionNumber = n
		return
	}
	counts := map[int32]int{}
	for _, other := range s.launch.instances {
		if other.Placement.GroupID == pg.ID && other.State != InstanceStateTerminated {
			counts[other.Placement.PartitionNumber]++
		}
	}
	best := int32(1)
	for p := int32(2); p <= pg.PartitionCount; p++ {
		if counts[p] < counts[best] {
			best = p
		}
	}
	inst.Placement.PartitionNumber = best
}

// AddPlacementGroup adds a placement group (see CreatePlacementGroup for the rules) and returns
// it with its id.
func (s *Server) AddPlacementGroup(pg PlacementGroup) (PlacementGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, err := s.resources.addPlacementGroup(pg)
	if err != nil {
		return PlacementGroup{}, err
	}
	out := *stored
	out.Tags = maps.Clone(stored.Tags)
	return out, nil
}
