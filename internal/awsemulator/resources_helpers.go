package awsemulator

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"time"
)

// Test helpers that change or read the emulated resources directly, as an operator would with
// the console. Each takes the server's lock, so they are safe while clients are calling.

// SetClock makes the emulator judge image deprecation and reservation expiry at now() instead
// of the wall clock.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources.now = now
}

// nextSeed is a unique seed for a resource added by a test without an id.
func (s *Server) nextSeed(kind string) string {
	s.resources.added++
	return kind + "/added/" + strconv.Itoa(s.resources.added)
}

// AddSubnet adds a subnet and returns it with its id (generated when empty). An empty VPCID
// places it in the cluster VPC; the zone must be one of the region's.
func (s *Server) AddSubnet(sn Subnet) (Subnet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.zone(sn.Zone); !ok {
		return Subnet{}, fmt.Errorf("awsemulator: zone %q is not in region %s", sn.Zone, s.Region)
	}
	if sn.VPCID == "" {
		sn.VPCID = resourceID("vpc", s.Region+"/cluster")
	}
	return *s.resources.addSubnet(sn, s.nextSeed("subnet")), nil
}

// AddSecurityGroup adds a security group and returns it with its id.
func (s *Server) AddSecurityGroup(sg SecurityGroup) SecurityGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sg.VPCID == "" {
		sg.VPCID = resourceID("vpc", s.Region+"/cluster")
	}
	return *s.resources.addSecurityGroup(sg, s.nextSeed("sg"))
}

// AddImage adds an image and returns it with its id. An empty OwnerID makes it the account's
// own.
func (s *Server) AddImage(img Image) Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	if img.OwnerID == "" {
		img.OwnerID = AccountID
	}
	if img.CreationDate.IsZero() {
		img.CreationDate = s.resources.now()
	}
	return *s.resources.addImage(img, s.nextSeed("ami"))
}

// AddCapacityReservation adds a capacity reservation and returns it with its id and defaults.
func (s *Server) AddCapacityReservation(cr CapacityReservation) CapacityReservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cr.OwnerID == "" {
		cr.OwnerID = AccountID
	}
	return *s.resources.addCapacityReservation(cr, s.nextSeed("cr"))
}

// DeleteResource removes the subnet, security group, image or capacity reservation with id and
// reports whether there was one.
func (s *Server) DeleteResource(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.resources
	for _, del := range []func() bool{
		func() bool { _, ok := r.subnets[id]; delete(r.subnets, id); return ok },
		func() bool { _, ok := r.securityGroups[id]; delete(r.securityGroups, id); return ok },
		func() bool { _, ok := r.images[id]; delete(r.images, id); return ok },
		func() bool { _, ok := r.reservations[id]; delete(r.reservations, id); return ok },
	} {
		if del() {
			return true
		}
	}
	return false
}

// SetTags replaces the tags of the subnet, security group, image or capacity reservation id.
func (s *Server) SetTags(id string, tags map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.resources
	switch {
	case r.subnets[id] != nil:
		r.subnets[id].Tags = cloneTags(tags)
	case r.securityGroups[id] != nil:
		r.securityGroups[id].Tags = cloneTags(tags)
	case r.images[id] != nil:
		r.images[id].Tags = cloneTags(tags)
	case r.reservations[id] != nil:
		r.reservations[id].Tags = cloneTags(tags)
	default:
		return fmt.Errorf("awsemulator: no resource %s", id)
	}
	return nil
}

// SetAvailableIPs sets a subnet's free address count.
func (s *Server) SetAvailableIPs(subnetID string, n int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, ok := s.resources.subnets[subnetID]
	if !ok {
		return fmt.Errorf("awsemulator: no subnet %s", subnetID)
	}
	sn.AvailableIPs = n
	return nil
}

// Subnets returns every subnet, sorted by id.
func (s *Server) Subnets() []Subnet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedCopies(s.resources.subnets, func(v Subnet) Subnet { v.Tags = maps.Clone(v.Tags); return v })
}

// SecurityGroups returns every security group, sorted by id.
func (s *Server) SecurityGroups() []SecurityGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedCopies(s.resources.securityGroups, func(v SecurityGroup) SecurityGroup { v.Tags = maps.Clone(v.Tags); return v })
}

// Images returns the images whose name matches pattern (* and ? wildcards), sorted by id.
func (s *Server) Images(pattern string) []Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Image
	for _, img := range sortedCopies(s.resources.images, func(v Image) Image { v.Tags = maps.Clone(v.Tags); return v }) {
		if wildcardMatch(pattern, img.Name) {
			out = append(out, img)
		}
	}
	return out
}

// CapacityReservations returns every capacity reservation, sorted by id.
func (s *Server) CapacityReservations() []CapacityReservation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedCopies(s.resources.reservations, func(v CapacityReservation) CapacityReservation { v.Tags = maps.Clone(v.Tags); return v })
}

// PutParameter creates or overwrites an SSM parameter whose value is an AMI id or text.
func (s *Server) PutParameter(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources.putParameter(name, value, "text", s.resources.now())
}

// DeleteParameter removes an SSM parameter.
func (s *Server) DeleteParameter(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.resources.parameters, name)
}

// ParameterValue returns an SSM parameter's value.
func (s *Server) ParameterValue(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.resources.parameters[name]
	if !ok {
		return "", false
	}
	return p.Value, true
}

// AddRole creates an IAM role.
func (s *Server) AddRole(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources.addRole(name, s.resources.now())
}

// DeleteRole removes an IAM role; instance profiles that held it keep a dangling reference,
// as IAM requires removing it from them first in reality.
func (s *Server) DeleteRole(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.resources.roles, name)
}

// AddInstanceProfile creates an instance profile holding role (none when empty).
func (s *Server) AddInstanceProfile(name, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &InstanceProfile{Name: name, ID: iamID("AIPA", name), Path: "/", CreateDate: s.resources.now(), Tags: map[string]string{}}
	if role != "" {
		p.Roles = []string{role}
	}
	s.resources.instanceProfiles[name] = p
}

// SetInstanceProfileRole replaces the role an instance profile holds, out of band.
func (s *Server) SetInstanceProfileRole(name, role string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.resources.instanceProfiles[name]
	if !ok {
		return fmt.Errorf("awsemulator: no instance profile %s", name)
	}
	p.Roles = []string{role}
	return nil
}

// InstanceProfile returns an instance profile.
func (s *Server) InstanceProfile(name string) (InstanceProfile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.resources.instanceProfiles[name]
	if !ok {
		return InstanceProfile{}, false
	}
	out := *p
	out.Roles = append([]string(nil), p.Roles...)
	out.Tags = maps.Clone(p.Tags)
	return out, true
}

// SetInstanceProfileQuota sets the account's instance profile quota (IAM's default is 1000).
func (s *Server) SetInstanceProfileQuota(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources.instanceProfileLimit = n
}

func sortedCopies[T any](m map[string]*T, copyOf func(T) T) []T {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]T, 0, len(ids))
	for _, id := range ids {
		out = append(out, copyOf(*m[id]))
	}
	return out
}
