package awsemulator

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// iamTime is IAM's timestamp format in XML answers.
const iamTime = "2006-01-02T15:04:05Z"

// maxTagsPerIAMResource is IAM's quota of tags on one role or instance profile.
const maxTagsPerIAMResource = 50

var iamNamePattern = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)

// IAM's error answers.
func errNoSuchEntity(format string, args ...any) *APIError {
	return &APIError{Code: "NoSuchEntity", Message: fmt.Sprintf(format, args...), Status: http.StatusNotFound}
}

func errEntityAlreadyExists(format string, args ...any) *APIError {
	return &APIError{Code: "EntityAlreadyExists", Message: fmt.Sprintf(format, args...), Status: http.StatusConflict}
}

func errLimitExceeded(format string, args ...any) *APIError {
	return &APIError{Code: "LimitExceeded", Message: fmt.Sprintf(format, args...), Status: http.StatusConflict}
}

func errDeleteConflict(format string, args ...any) *APIError {
	return &APIError{Code: "DeleteConflict", Message: fmt.Sprintf(format, args...), Status: http.StatusConflict}
}

func errIAMValidation(format string, args ...any) *APIError {
	return &APIError{Code: "ValidationError", Message: fmt.Sprintf(format, args...)}
}

type iamTagXML struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

func iamTags(tags map[string]string) []iamTagXML {
	out := make([]iamTagXML, 0, len(tags))
	for k, v := range tags {
		out = append(out, iamTagXML{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

type roleXML struct {
	Path                     string      `xml:"Path"`
	RoleName                 string      `xml:"RoleName"`
	RoleID                   string      `xml:"RoleId"`
	Arn                      string      `xml:"Arn"`
	CreateDate               string      `xml:"CreateDate"`
	AssumeRolePolicyDocument string      `xml:"AssumeRolePolicyDocument"`
	Tags                     []iamTagXML `xml:"Tags>member,omitempty"`
}

type instanceProfileXML struct {
	Path                string      `xml:"Path"`
	InstanceProfileName string      `xml:"InstanceProfileName"`
	InstanceProfileID   string      `xml:"InstanceProfileId"`
	Arn                 string      `xml:"Arn"`
	CreateDate          string      `xml:"CreateDate"`
	Roles               []roleXML   `xml:"Roles>member"`
	Tags                []iamTagXML `xml:"Tags>member,omitempty"`
}

// ec2AssumeRolePolicy lets EC2 instances assume a node role; IAM answers it URL-encoded.
const ec2AssumeRolePolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`

func (r *resourceState) roleXML(role *Role) roleXML {
	return roleXML{
		Path: role.Path, RoleName: role.Name, RoleID: role.ID,
		Arn:        fmt.Sprintf("arn:aws:iam::%s:role%s%s", AccountID, role.Path, role.Name),
		CreateDate: role.CreateDate.UTC().Format(iamTime), AssumeRolePolicyDocument: url.QueryEscape(ec2AssumeRolePolicy),
		Tags: iamTags(role.Tags),
	}
}

func (r *resourceState) instanceProfileXML(p *InstanceProfile) instanceProfileXML {
	out := instanceProfileXML{
		Path: p.Path, InstanceProfileName: p.Name, InstanceProfileID: p.ID,
		Arn:        fmt.Sprintf("arn:aws:iam::%s:instance-profile%s%s", AccountID, p.Path, p.Name),
		CreateDate: p.CreateDate.UTC().Format(iamTime), Roles: []roleXML{}, Tags: iamTags(p.Tags),
	}
	for _, name := range p.Roles {
		if role, ok := r.roles[name]; ok {
			out.Roles = append(out.Roles, r.roleXML(role))
		}
	}
	return out
}

func (r *resourceState) lookupInstanceProfile(q Query) (*InstanceProfile, error) {
	name := q.Get("InstanceProfileName")
	if name == "" {
		return nil, errIAMValidation("1 validation error detected: Value null at 'instanceProfileName' failed to satisfy constraint: Member must not be null")
	}
	p, ok := r.instanceProfiles[name]
	if !ok {
		return nil, errNoSuchEntity("Instance Profile %s cannot be found.", name)
	}
	return p, nil
}

func (r *resourceState) lookupRole(q Query) (*Role, error) {
	name := q.Get("RoleName")
	if name == "" {
		return nil, errIAMValidation("1 validation error detected: Value null at 'roleName' failed to satisfy constraint: Member must not be null")
	}
	role, ok := r.roles[name]
	if !ok {
		return nil, errNoSuchEntity("The role with name %s cannot be found.", name)
	}
	return role, nil
}

// requestTags reads IAM's Tags.member.N.Key/Value list and checks IAM's limits.
func requestTags(q Query) (map[string]string, error) {
	tags := q.Tags("Tags.member")
	if len(tags) > maxTagsPerIAMResource {
		return nil, errLimitExceeded("The number of tags has reached the maximum limit of %d.", maxTagsPerIAMResource)
	}
	for k := range tags {
		if k == "" || len(k) > 128 || strings.HasPrefix(strings.ToLower(k), "aws:") {
			return nil, errIAMValidation("the tag key %q is invalid", k)
		}
	}
	return tags, nil
}

func (s *Server) createInstanceProfile(_ context.Context, q Query) (any, error) {
	r := s.resources
	name := q.Get("InstanceProfileName")
	if !iamNamePattern.MatchString(name) {
		return nil, errIAMValidation("1 validation error detected: Value '%s' at 'instanceProfileName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]+", name)
	}
	if _, ok := r.instanceProfiles[name]; ok {
		return nil, errEntityAlreadyExists("Instance Profile %s already exists.", name)
	}
	if len(r.instanceProfiles) >= r.instanceProfileLimit {
		return nil, errLimitExceeded("Cannot exceed quota for InstanceProfilesPerAccount: %d", r.instanceProfileLimit)
	}
	tags, err := requestTags(q)
	if err != nil {
		return nil, err
	}
	path := q.Get("Path")
	if path == "" {
		path = "/"
	}
	p := &InstanceProfile{Name: name, ID: iamID("AIPA", name+r.now().String()), Path: path, CreateDate: r.now(), Tags: tags}
	r.instanceProfiles[name] = p
	return struct {
		InstanceProfile instanceProfileXML `xml:"InstanceProfile"`
	}{r.instanceProfileXML(p)}, nil
}

func (s *Server) getInstanceProfile(_ context.Context, q Query) (any, error) {
	p, err := s.resources.lookupInstanceProfile(q)
	if err != nil {
		return nil, err
	}
	return struct {
		InstanceProfile instanceProfileXML `xml:"InstanceProfile"`
	}{s.resources.instanceProfileXML(p)}, nil
}

func (s *Server) deleteInstanceProfile(_ context.Context, q Query) (any, error) {
	p, err := s.resources.lookupInstanceProfile(q)
	if err != nil {
		return nil, err
	}
	if len(p.Roles) > 0 {
		return nil, errDeleteConflict("Cannot delete entity, must remove roles from instance profile first.")
	}
	delete(s.resources.instanceProfiles, p.Name)
	return nil, nil
}

func (s *Server) addRoleToInstanceProfile(_ context.Context, q Query) (any, error) {
	p, err := s.resources.lookupInstanceProfile(q)
	if err != nil {
		return nil, err
	}
	role, err := s.resources.lookupRole(q)
	if err != nil {
		return nil, err
	}
	if len(p.Roles) > 0 {
		return nil, errLimitExceeded("Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
	}
	p.Roles = []string{role.Name}
	return nil, nil
}

func (s *Server) removeRoleFromInstanceProfile(_ context.Context, q Query) (any, error) {
	p, err := s.resources.lookupInstanceProfile(q)
	if err != nil {
		return nil, err
	}
	name := q.Get("RoleName")
	if !contains(p.Roles, name) {
		return nil, errNoSuchEntity("The role with name %s cannot be found.", name)
	}
	p.Roles = nil
	return nil, nil
}

func (s *Server) tagInstanceProfile(_ context.Context, q Query) (any, error) {
	p, err := s.resources.lookupInstanceProfile(q)
	if err != nil {
		return nil, err
	}
	tags, err := requestTags(q)
	if err != nil {
		return nil, err
	}
	merged := cloneTags(p.Tags)
	for k, v := range tags {
		merged[k] = v
	}
	if len(merged) > maxTagsPerIAMResource {
		return nil, errLimitExceeded("The number of tags has reached the maximum limit of %d.", maxTagsPerIAMResource)
	}
	p.Tags = merged
	return nil, nil
}

func (s *Server) untagInstanceProfile(_ context.Context, q Query) (any, error) {
	p, err := s.resources.lookupInstanceProfile(q)
	if err != nil {
		return nil, err
	}
	for _, k := range q.List("TagKeys.member") {
		delete(p.Tags, k)
	}
	return nil, nil
}

func (s *Server) getRole(_ context.Context, q Query) (any, error) {
	role, err := s.resources.lookupRole(q)
	if err != nil {
		return nil, err
	}
	return struct {
		Role roleXML `xml:"Role"`
	}{s.resources.roleXML(role)}, nil
}

// listInstanceProfiles pages through the profiles under PathPrefix, by name.
func (s *Server) listInstanceProfiles(_ context.Context, q Query) (any, error) {
	prefix := q.Get("PathPrefix")
	if prefix == "" {
		prefix = "/"
	}
	var names []string
	for name, p := range s.resources.instanceProfiles {
		if strings.HasPrefix(p.Path, prefix) {
			names = append(names, name)
		}
	}
	return s.resources.instanceProfilePage(names, q)
}

// listInstanceProfilesForRole lists the profiles holding the role.
func (s *Server) listInstanceProfilesForRole(_ context.Context, q Query) (any, error) {
	role, err := s.resources.lookupRole(q)
	if err != nil {
		return nil, err
	}
	var names []string
	for name, p := range s.resources.instanceProfiles {
		if contains(p.Roles, role.Name) {
			names = append(names, name)
		}
	}
	return s.resources.instanceProfilePage(names, q)
}

// instanceProfilePage answers one page of IAM's Marker/MaxItems pagination (100 by default).
func (r *resourceState) instanceProfilePage(names []string, q Query) (any, error) {
	sort.Strings(names)
	maxItems, err := q.Int("MaxItems", 100)
	if err != nil || maxItems < 1 || maxItems > 1000 {
		return nil, errIAMValidation("MaxItems must be between 1 and 1000")
	}
	start := 0
	if marker := q.Get("Marker"); marker != "" {
		start = sort.SearchStrings(names, marker)
	}
	end := min(start+maxItems, len(names))
	out := struct {
		InstanceProfiles []instanceProfileXML `xml:"InstanceProfiles>member"`
		IsTruncated      bool                 `xml:"IsTruncated"`
		Marker           string               `xml:"Marker,omitempty"`
	}{InstanceProfiles: []instanceProfileXML{}}
	for _, name := range names[start:end] {
		out.InstanceProfiles = append(out.InstanceProfiles, r.instanceProfileXML(r.instanceProfiles[name]))
	}
	if end < len(names) {
		out.IsTruncated, out.Marker = true, names[end]
	}
	return out, nil
}
