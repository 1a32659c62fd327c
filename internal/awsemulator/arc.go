package awsemulator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Zonal shift statuses, ARC's.
const (
	ZonalShiftActive   = "ACTIVE"
	ZonalShiftExpired  = "EXPIRED"
	ZonalShiftCanceled = "CANCELED"
)

// shiftState is ARC's zonal shifts of the account, in the order they were started.
type shiftState struct {
	shifts []*zonalShift
	seq    int
	// autoshifts are AWS's autoshifts of the region (arc_autoshift.go); autoshiftEnabled is
	// the cluster's zonal autoshift status.
	autoshifts       []*autoshift
	autoshiftEnabled bool
}

type zonalShift struct {
	ID, Resource, AwayFrom, Comment string
	Start, Expiry                   time.Time
	Canceled                        bool
}

// status is the shift's status at now: a shift past its expiry has expired.
func (z *zonalShift) status(now time.Time) string {
	switch {
	case z.Canceled:
		return ZonalShiftCanceled
	case !now.Before(z.Expiry):
		return ZonalShiftExpired
	}
	return ZonalShiftActive
}

func (s *Server) registerARC() {
	s.shifts = &shiftState{}
	s.handleREST(ServiceARC, "StartZonalShift", "POST /zonalshifts", s.startZonalShift)
	s.handleREST(ServiceARC, "ListZonalShifts", "GET /zonalshifts", s.listZonalShifts)
	s.handleREST(ServiceARC, "CancelZonalShift", "DELETE /zonalshifts/{zonalShiftId}", s.cancelZonalShift)
	s.registerAutoshift()
}

type zonalShiftJSON struct {
	ZonalShiftID       string  `json:"zonalShiftId"`
	ResourceIdentifier string  `json:"resourceIdentifier"`
	AwayFrom           string  `json:"awayFrom"`
	StartTime          float64 `json:"startTime"`
	ExpiryTime         float64 `json:"expiryTime"`
	Status             string  `json:"status"`
	Comment            string  `json:"comment"`
	ShiftType          string  `json:"shiftType"`
}

func (s *Server) zonalShiftJSON(z *zonalShift) zonalShiftJSON {
	return zonalShiftJSON{
		ZonalShiftID: z.ID, ResourceIdentifier: z.Resource, AwayFrom: z.AwayFrom,
		StartTime: epochSeconds(z.Start), ExpiryTime: epochSeconds(z.Expiry), Status: z.status(s.now()),
		Comment: z.Comment, ShiftType: "ZONAL_SHIFT",
	}
}

// expiresIn is ARC's expiration: minutes or hours, from a minute up to three days.
var expiresIn = regexp.MustCompile(`^([1-9][0-9]{0,4})([mh])$`)

func parseExpiresIn(v string) (time.Duration, error) {
	m := expiresIn.FindStringSubmatch(v)
	if m == nil {
		return 0, errValidation("expiresIn %q is not a number of minutes (m) or hours (h), e.g. 30m or 2h", v)
	}
	n, _ := strconv.Atoi(m[1])
	d := time.Duration(n) * time.Minute
	if m[2] == "h" {
		d = time.Duration(n) * time.Hour
	}
	if d > 72*time.Hour {
		return 0, errValidation("expiresIn %s is longer than three days", v)
	}
	return d, nil
}

func errValidation(format string, args ...any) *APIError {
	return &APIError{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Status: http.StatusBadRequest}
}

// startZonalShift shifts the cluster's traffic away from a zone (by zone ID, as ARC names
// zones). The cluster is the account's only managed resource; a resource may have one
// active shift at a time.
func (s *Server) startZonalShift(_ context.Context, r restRequest) (any, error) {
	var in struct {
		ResourceIdentifier string `json:"resourceIdentifier"`
		AwayFrom           string `json:"awayFrom"`
		ExpiresIn          string `json:"expiresIn"`
		Comment            string `json:"comment"`
	}
	if err := json.Unmarshal(r.body, &in); err != nil {
		return nil, errValidation("decoding the request: %v", err)
	}
	if in.ResourceIdentifier != s.ClusterARN() {
		return nil, &APIError{Code: "ResourceNotFoundException", Message: fmt.Sprintf("managed resource %s not found (the emulator manages %s)", in.ResourceIdentifier, s.ClusterARN()), Status: http.StatusNotFound}
	}
	zone, ok := s.zone(in.AwayFrom)
	if !ok || zone.ID != in.AwayFrom {
		return nil, errValidation("awayFrom %q is not an Availability Zone ID of %s", in.AwayFrom, s.Region)
	}
	d, err := parseExpiresIn(in.ExpiresIn)
	if err != nil {
		return nil, err
	}
	now := s.now()
	for _, z := range s.shifts.shifts {
		if z.Resource == in.ResourceIdentifier && z.status(now) == ZonalShiftActive {
			return nil, &APIError{Code: "ConflictException", Message: fmt.Sprintf("zonal shift %s is already active for %s", z.ID, z.Resource), Status: http.StatusConflict}
		}
	}
	s.shifts.seq++
	z := &zonalShift{
		ID: fmt.Sprintf("%08x-0000-4000-8000-%012d", s.shifts.seq, s.shifts.seq), Resource: in.ResourceIdentifier,
		AwayFrom: in.AwayFrom, Comment: in.Comment, Start: now, Expiry: now.Add(d),
	}
	s.shifts.shifts = append(s.shifts.shifts, z)
	return s.zonalShiftJSON(z), nil
}

// listZonalShifts lists shifts, filtered by status and resource, a page at a time.
func (s *Server) listZonalShifts(_ context.Context, r restRequest) (any, error) {
	status, resource := r.query.Get("status"), r.query.Get("resourceIdentifier")
	if status != "" && !slices.Contains([]string{ZonalShiftActive, ZonalShiftExpired, ZonalShiftCanceled}, status) {
		return nil, errValidation("status %q is not ACTIVE, EXPIRED or CANCELED", status)
	}
	start, pageSize, err := pageOf(r)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var matched []zonalShiftJSON
	for _, z := range s.shifts.shifts {
		if (status == "" || z.status(now) == status) && (resource == "" || z.Resource == resource) {
			matched = append(matched, s.zonalShiftJSON(z))
		}
	}
	out := struct {
		Items     []zonalShiftJSON `json:"items"`
		NextToken string           `json:"nextToken,omitempty"`
	}{Items: []zonalShiftJSON{}}
	if start < len(matched) {
		end := min(start+pageSize, len(matched))
		out.Items = matched[start:end]
		if end < len(matched) {
			out.NextToken = strconv.Itoa(end)
		}
	}
	return out, nil
}

// cancelZonalShift ends an active shift; traffic returns to the zone.
func (s *Server) cancelZonalShift(_ context.Context, r restRequest) (any, error) {
	id := r.path("zonalShiftId")
	i := slices.IndexFunc(s.shifts.shifts, func(z *zonalShift) bool { return z.ID == id })
	if i < 0 {
		return nil, &APIError{Code: "ResourceNotFoundException", Message: fmt.Sprintf("zonal shift %s not found", id), Status: http.StatusNotFound}
	}
	z := s.shifts.shifts[i]
	if st := z.status(s.now()); st != ZonalShiftActive {
		return nil, &APIError{Code: "ConflictException", Message: fmt.Sprintf("zonal shift %s is %s, not active", id, st), Status: http.StatusConflict}
	}
	z.Canceled = true
	return s.zonalShiftJSON(z), nil
}
