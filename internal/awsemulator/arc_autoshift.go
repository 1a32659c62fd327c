package awsemulator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Autoshift statuses and the applied status of a shift in a resource, ARC's.
const (
	AutoshiftActive    = "ACTIVE"
	AutoshiftCompleted = "COMPLETED"
	appliedStatus      = "APPLIED"
	notAppliedStatus   = "NOT_APPLIED"
)

// autoshift is an AWS-initiated shift away from a zone of the region. It applies to every
// managed resource whose zonal autoshift is ENABLED, until AWS ends it.
type autoshift struct {
	AwayFrom   string
	Start, End time.Time // End is zero while it is active
}

func (a *autoshift) status() string {
	if a.End.IsZero() {
		return AutoshiftActive
	}
	return AutoshiftCompleted
}

func (s *Server) registerAutoshift() {
	s.handleREST(ServiceARC, "ListAutoshifts", "GET /autoshifts", s.listAutoshifts)
	s.handleREST(ServiceARC, "GetManagedResource", "GET /managedresources/{resourceIdentifier}", s.getManagedResource)
	s.handleREST(ServiceARC, "UpdateZonalAutoshiftConfiguration", "PUT /managedresources/{resourceIdentifier}", s.updateZonalAutoshiftConfiguration)
}

// StartAutoshift starts an AWS-initiated autoshift away from the zone of ID zoneID, as AWS does
// when its telemetry finds the zone impaired. It fails for an unknown zone ID and when an
// autoshift away from the zone is already active.
func (s *Server) StartAutoshift(zoneID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if zone, ok := s.zone(zoneID); !ok || zone.ID != zoneID {
		return fmt.Errorf("%q is not an Availability Zone ID of %s", zoneID, s.Region)
	}
	if slices.ContainsFunc(s.shifts.autoshifts, func(a *autoshift) bool { return a.AwayFrom == zoneID && a.End.IsZero() }) {
		return fmt.Errorf("an autoshift away from %s is already active", zoneID)
	}
	s.shifts.autoshifts = append(s.shifts.autoshifts, &autoshift{AwayFrom: zoneID, Start: s.now()})
	return nil
}

// EndAutoshift completes the active autoshift away from the zone of ID zoneID; it fails when
// there is none.
func (s *Server) EndAutoshift(zoneID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.shifts.autoshifts {
		if a.AwayFrom == zoneID && a.End.IsZero() {
			a.End = s.now()
			return nil
		}
	}
	return fmt.Errorf("no autoshift away from %s is active", zoneID)
}

type autoshiftJSON struct {
	AwayFrom  string   `json:"awayFrom"`
	StartTime float64  `json:"startTime"`
	EndTime   *float64 `json:"endTime,omitempty"`
	Status    string   `json:"status"`
}

// listAutoshifts lists the region's autoshifts, whatever resources they apply to: the active
// ones unless status asks for the completed ones, a page at a time.
func (s *Server) listAutoshifts(_ context.Context, r restRequest) (any, error) {
	status := r.query.Get("status")
	if status == "" {
		status = AutoshiftActive
	}
	if status != AutoshiftActive && status != AutoshiftCompleted {
		return nil, errValidation("status %q is not ACTIVE or COMPLETED", status)
	}
	start, pageSize, err := pageOf(r)
	if err != nil {
		return nil, err
	}
	var matched []autoshiftJSON
	for _, a := range s.shifts.autoshifts {
		if a.status() != status {
			continue
		}
		item := autoshiftJSON{AwayFrom: a.AwayFrom, StartTime: epochSeconds(a.Start), Status: a.status()}
		if !a.End.IsZero() {
			end := epochSeconds(a.End)
			item.EndTime = &end
		}
		matched = append(matched, item)
	}
	out := struct {
		Items     []autoshiftJSON `json:"items"`
		NextToken string          `json:"nextToken,omitempty"`
	}{Items: []autoshiftJSON{}}
	if start < len(matched) {
		end := min(start+pageSize, len(matched))
		out.Items = matched[start:end]
		if end < len(matched) {
			out.NextToken = strconv.Itoa(end)
		}
	}
	return out, nil
}

// pageOf reads the maxResults and nextToken of a list call: where the page starts and its size.
func pageOf(r restRequest) (start, size int, err error) {
	size = 100
	if v := r.query.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return 0, 0, errValidation("maxResults %q is not in [1, 100]", v)
		}
		size = n
	}
	if tok := r.query.Get("nextToken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 {
			return 0, 0, errValidation("nextToken %q is not valid", tok)
		}
		start = n
	}
	return start, size, nil
}

// managedResource checks that id names the account's one managed resource, the cluster.
func (s *Server) managedResource(id string) error {
	if id != s.ClusterARN() {
		return &APIError{Code: "ResourceNotFoundException", Message: fmt.Sprintf("managed resource %s not found (the emulator manages %s)", id, s.ClusterARN()), Status: http.StatusNotFound}
	}
	return nil
}

type zonalShiftInResourceJSON struct {
	AppliedStatus      string  `json:"appliedStatus"`
	ZonalShiftID       string  `json:"zonalShiftId"`
	ResourceIdentifier string  `json:"resourceIdentifier"`
	AwayFrom           string  `json:"awayFrom"`
	StartTime          float64 `json:"startTime"`
	ExpiryTime         float64 `json:"expiryTime"`
	Comment            string  `json:"comment"`
	ShiftType          string  `json:"shiftType"`
}

type autoshiftInResourceJSON struct {
	AppliedStatus string  `json:"appliedStatus"`
	AwayFrom      string  `json:"awayFrom"`
	StartTime     float64 `json:"startTime"`
}

// getManagedResource describes the cluster as ARC manages it: its active zonal shifts and,
// with zonal autoshift ENABLED, the region's active autoshifts, each APPLIED or NOT_APPLIED.
// One shift is applied at a time, by ARC's precedence: a customer's shift over an autoshift;
// among autoshifts, the earliest. appliedWeights is 0 for the applied shift's zone.
func (s *Server) getManagedResource(_ context.Context, r restRequest) (any, error) {
	id := r.path("resourceIdentifier")
	if err := s.managedResource(id); err != nil {
		return nil, err
	}
	now := s.now()
	out := struct {
		Arn                  string                     `json:"arn"`
		Name                 string                     `json:"name"`
		AppliedWeights       map[string]float32         `json:"appliedWeights"`
		ZonalShifts          []zonalShiftInResourceJSON `json:"zonalShifts"`
		Autoshifts           []autoshiftInResourceJSON  `json:"autoshifts,omitempty"`
		ZonalAutoshiftStatus string                     `json:"zonalAutoshiftStatus"`
	}{Arn: id, Name: s.cluster.Name, AppliedWeights: map[string]float32{}, ZonalShifts: []zonalShiftInResourceJSON{}, ZonalAutoshiftStatus: s.autoshiftStatus()}
	applied := ""
	for _, z := range s.shifts.shifts {
		if z.Resource != id || z.status(now) != ZonalShiftActive {
			continue
		}
		st := notAppliedStatus
		if applied == "" {
			st, applied = appliedStatus, z.AwayFrom
		}
		out.ZonalShifts = append(out.ZonalShifts, zonalShiftInResourceJSON{
			AppliedStatus: st, ZonalShiftID: z.ID, ResourceIdentifier: z.Resource, AwayFrom: z.AwayFrom,
			StartTime: epochSeconds(z.Start), ExpiryTime: epochSeconds(z.Expiry), Comment: z.Comment, ShiftType: "ZONAL_SHIFT",
		})
	}
	if s.shifts.autoshiftEnabled {
		for _, a := range s.shifts.autoshifts {
			if !a.End.IsZero() {
				continue
			}
			st := notAppliedStatus
			if applied == "" {
				st, applied = appliedStatus, a.AwayFrom
			}
			out.Autoshifts = append(out.Autoshifts, autoshiftInResourceJSON{AppliedStatus: st, AwayFrom: a.AwayFrom, StartTime: epochSeconds(a.Start)})
		}
	}
	for _, z := range regions[s.Region] {
		out.AppliedWeights[z.ID] = 1
		if z.ID == applied {
			out.AppliedWeights[z.ID] = 0
		}
	}
	return out, nil
}

func (s *Server) autoshiftStatus() string {
	if s.shifts.autoshiftEnabled {
		return "ENABLED"
	}
	return "DISABLED"
}

// updateZonalAutoshiftConfiguration enables or disables zonal autoshift for the cluster. (ARC
// asks for a practice-run configuration first; the emulator does not emulate practice runs.)
func (s *Server) updateZonalAutoshiftConfiguration(_ context.Context, r restRequest) (any, error) {
	id := r.path("resourceIdentifier")
	if err := s.managedResource(id); err != nil {
		return nil, err
	}
	var in struct {
		ZonalAutoshiftStatus string `json:"zonalAutoshiftStatus"`
	}
	if err := json.Unmarshal(r.body, &in); err != nil {
		return nil, errValidation("decoding the request: %v", err)
	}
	switch in.ZonalAutoshiftStatus {
	case "ENABLED":
		s.shifts.autoshiftEnabled = true
	case "DISABLED":
		s.shifts.autoshiftEnabled = false
	default:
		return nil, errValidation("zonalAutoshiftStatus %q is not ENABLED or DISABLED", in.ZonalAutoshiftStatus)
	}
	return struct {
		ResourceIdentifier   string `json:"resourceIdentifier"`
		ZonalAutoshiftStatus string `json:"zonalAutoshiftStatus"`
	}{id, s.autoshiftStatus()}, nil
}
