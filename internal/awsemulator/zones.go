package awsemulator

import (
	"context"
	"fmt"
	"sort"
)

// Zone is an availability zone of an emulated region.
type Zone struct {
	Name   string // us-west-2a
	ID     string // usw2-az1
	Region string
}

// regions lists the emulated regions and their zones. Zone IDs map to names per account in
// real AWS; these are fixed so tests can name them.
var regions = map[string][]Zone{
	"us-west-2": {
		{Name: "us-west-2a", ID: "usw2-az2", Region: "us-west-2"},
		{Name: "us-west-2b", ID: "usw2-az1", Region: "us-west-2"},
		{Name: "us-west-2c", ID: "usw2-az3", Region: "us-west-2"},
		{Name: "us-west-2d", ID: "usw2-az4", Region: "us-west-2"},
	},
	"us-east-1": {
		{Name: "us-east-1a", ID: "use1-az6", Region: "us-east-1"},
		{Name: "us-east-1b", ID: "use1-az1", Region: "us-east-1"},
		{Name: "us-east-1c", ID: "use1-az2", Region: "us-east-1"},
		{Name: "us-east-1d", ID: "use1-az4", Region: "us-east-1"},
		{Name: "us-east-1e", ID: "use1-az3", Region: "us-east-1"},
		{Name: "us-east-1f", ID: "use1-az5", Region: "us-east-1"},
	},
}

// Regions returns the names of the emulated regions, sorted.
func Regions() []string {
	out := make([]string, 0, len(regions))
	for r := range regions {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Zones returns the zones of the server's region.
func (s *Server) Zones() []Zone { return append([]Zone(nil), regions[s.Region]...) }

// zone looks a zone of the server's region up by name or ID.
func (s *Server) zone(nameOrID string) (Zone, bool) {
	for _, z := range regions[s.Region] {
		if z.Name == nameOrID || z.ID == nameOrID {
			return z, true
		}
	}
	return Zone{}, false
}

type availabilityZoneXML struct {
	ZoneName   string `xml:"zoneName"`
	ZoneID     string `xml:"zoneId"`
	RegionName string `xml:"regionName"`
	State      string `xml:"zoneState"`
	ZoneType   string `xml:"zoneType"`
}

// describeAvailabilityZones answers with the region's zones, filtered by zone-name / zone-id.
func (s *Server) describeAvailabilityZones(_ context.Context, q Query) (any, error) {
	names := q.List("ZoneName")
	ids := q.List("ZoneId")
	for _, f := range q.Filters() {
		switch f.Name {
		case "zone-name":
			names = append(names, f.Values...)
		case "zone-id":
			ids = append(ids, f.Values...)
		case "region-name", "state", "zone-type":
		default:
			return nil, errInvalidParameter("the filter '%s' is invalid", f.Name)
		}
	}
	var out []availabilityZoneXML
	for _, z := range regions[s.Region] {
		if len(names) > 0 && !contains(names, z.Name) || len(ids) > 0 && !contains(ids, z.ID) {
			continue
		}
		out = append(out, availabilityZoneXML{ZoneName: z.Name, ZoneID: z.ID, RegionName: z.Region, State: "available", ZoneType: "availability-zone"})
	}
	return struct {
		Zones []availabilityZoneXML `xml:"availabilityZoneInfo>item"`
	}{out}, nil
}

type regionXML struct {
	Name     string `xml:"regionName"`
	Endpoint string `xml:"regionEndpoint"`
}

func (s *Server) describeRegions(_ context.Context, _ Query) (any, error) {
	var out []regionXML
	for _, r := range Regions() {
		out = append(out, regionXML{Name: r, Endpoint: fmt.Sprintf("ec2.%s.amazonaws.com", r)})
	}
	return struct {
		Regions []regionXML `xml:"regionInfo>item"`
	}{out}, nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
