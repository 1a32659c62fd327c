package awsemulator

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
)

var launchTemplateNamePattern = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

func errLaunchTemplateNameNotFound(name string) *APIError {
	return &APIError{Code: "InvalidLaunchTemplateName.NotFoundException", Message: fmt.Sprintf("The specified launch template, with template name %s, does not exist.", name)}
}

func errLaunchTemplateIDNotFound(id string) *APIError {
	return &APIError{Code: "InvalidLaunchTemplateId.NotFound", Message: fmt.Sprintf("The specified launch template, with template ID %s, does not exist.", id)}
}

type launchTemplateXML struct {
	ID                   string   `xml:"launchTemplateId"`
	Name                 string   `xml:"launchTemplateName"`
	CreateTime           string   `xml:"createTime"`
	CreatedBy            string   `xml:"createdBy"`
	DefaultVersionNumber int64    `xml:"defaultVersionNumber"`
	LatestVersionNumber  int64    `xml:"latestVersionNumber"`
	Tags                 []tagXML `xml:"tagSet>item"`
}

func launchTemplateInfo(lt *LaunchTemplate) launchTemplateXML {
	return launchTemplateXML{
		ID: lt.ID, Name: lt.Name, CreateTime: formatEC2Time(lt.CreateTime),
		CreatedBy:            fmt.Sprintf("arn:aws:iam::%s:role/joinery", AccountID),
		DefaultVersionNumber: 1, LatestVersionNumber: 1, Tags: tagSet(lt.Tags),
	}
}

// parseLaunchTemplateData reads LaunchTemplateData.* of a CreateLaunchTemplate request.
func parseLaunchTemplateData(d Query) (LaunchTemplateData, error) {
	out := LaunchTemplateData{
		ImageID:           d.Get("ImageId"),
		InstanceType:      d.Get("InstanceType"),
		SecurityGroupIDs:  d.List("SecurityGroupId"),
		Monitoring:        d.Bool("Monitoring.Enabled"),
		TagSpecifications: map[string]map[string]string{},
		MarketType:        d.Get("InstanceMarketOptions.MarketType"),
		MetadataOptions: MetadataOptions{
			HTTPEndpoint:     d.Get("MetadataOptions.HttpEndpoint"),
			HTTPProtocolIPv6: d.Get("MetadataOptions.HttpProtocolIpv6"),
			HTTPTokens:       d.Get("MetadataOptions.HttpTokens"),
		},
		CapacityReservationID: d.Get("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"),
	}
	out.InstanceProfile = d.Get("IamInstanceProfile.Name")
	if arn := d.Get("IamInstanceProfile.Arn"); arn != "" {
		out.InstanceProfile = arn
	}
	hops, err := d.Int("MetadataOptions.HttpPutResponseHopLimit", 0)
	if err != nil {
		return out, err
	}
	out.MetadataOptions.HTTPPutResponseHopLimit = int32(hops)
	if raw := d.Get("UserData"); raw != "" {
		decoded, err := base64.StdEncoding.DecodeString(raw)
		if err != nil {
			return out, &APIError{Code: "InvalidUserData.Malformed", Message: "User data is limited to 16384 bytes and must be base64-encoded: " + err.Error()}
		}
		if len(raw) > 16384 {
			return out, &APIError{Code: "InvalidUserData.Malformed", Message: fmt.Sprintf("User data is limited to 16384 bytes; got %d", len(raw))}
		}
		out.UserData = string(decoded)
	}
	for _, ni := range d.Members("NetworkInterface") {
		if ni.Get("DeviceIndex") != "0" && ni.Get("DeviceIndex") != "" {
			continue
		}
		if v := ni.Get("AssociatePublicIpAddress"); v != "" {
			b := v == "true"
			out.AssociatePublicIPAddress = &b
		}
		out.SecurityGroupIDs = append(out.SecurityGroupIDs, ni.List("SecurityGroupId")...)
		prefixes, err := ni.Int("Ipv4PrefixCount", 0)
		if err != nil {
			return out, err
		}
		out.IPv4PrefixCount = int32(prefixes)
	}
	out.PlacementGroupID, out.PlacementGroupName = d.Get("Placement.GroupId"), d.Get("Placement.GroupName")
	partition, err := d.Int("Placement.PartitionNumber", 0)
	if err != nil {
		return out, err
	}
	out.PartitionNumber = int32(partition)
	out.SecurityGroupIDs = dedupe(out.SecurityGroupIDs)
	for _, m := range d.Members("BlockDeviceMapping") {
		bdm := BlockDeviceMapping{
			DeviceName: m.Get("DeviceName"), VolumeType: m.Get("Ebs.VolumeType"),
			KMSKeyID: m.Get("Ebs.KmsKeyId"), SnapshotID: m.Get("Ebs.SnapshotId"),
		}
		for key, dst := range map[string]*int32{"Ebs.VolumeSize": &bdm.VolumeSizeGiB, "Ebs.Iops": &bdm.IOPS, "Ebs.Throughput": &bdm.Throughput} {
			n, err := m.Int(key, 0)
			if err != nil {
				return out, err
			}
			*dst = int32(n)
		}
		for key, dst := range map[string]**bool{"Ebs.Encrypted": &bdm.Encrypted, "Ebs.DeleteOnTermination": &bdm.DeleteOnTermination} {
			if v := m.Get(key); v != "" {
				b := v == "true"
				*dst = &b
			}
		}
		if bdm.DeviceName == "" {
			return out, errMissingParameter("LaunchTemplateData.BlockDeviceMapping.N.DeviceName")
		}
		out.BlockDeviceMappings = append(out.BlockDeviceMappings, bdm)
	}
	for _, spec := range d.Members("TagSpecification") {
		rt := spec.Get("ResourceType")
		if out.TagSpecifications[rt] == nil {
			out.TagSpecifications[rt] = map[string]string{}
		}
		for k, v := range spec.Tags("Tag") {
			out.TagSpecifications[rt][k] = v
		}
	}
	return out, nil
}

func (s *Server) createLaunchTemplate(_ context.Context, q Query) (any, error) {
	l := s.launch
	answer := func(lt *LaunchTemplate) any {
		return struct {
			LaunchTemplate launchTemplateXML `xml:"launchTemplate"`
		}{launchTemplateInfo(lt)}
	}
	token := q.Get("ClientToken")
	if id, ok := l.templateTokens[token]; ok && token != "" {
		if lt, ok := l.templates[id]; ok {
			return answer(lt), nil
		}
	}
	name := q.Get("LaunchTemplateName")
	if name == "" {
		return nil, errMissingParameter("LaunchTemplateName")
	}
	if !launchTemplateNamePattern.MatchString(name) {
		return nil, errInvalidParameter("Launch template name %q must be 3 to 128 characters of letters, digits and ( ) . - / _", name)
	}
	if _, exists := l.templateNames[name]; exists {
		return nil, &APIError{Code: "InvalidLaunchTemplateName.AlreadyExistsException", Message: fmt.Sprintf("Launch template name already in use: %s", name)}
	}
	data, err := parseLaunchTemplateData(q.Member("LaunchTemplateData"))
	if err != nil {
		return nil, err
	}
	lt := &LaunchTemplate{ID: l.newID("lt"), Name: name, CreateTime: s.resources.now(), Tags: map[string]string{}, Data: data}
	for _, spec := range q.Members("TagSpecification") {
		if rt := spec.Get("ResourceType"); rt != "launch-template" {
			return nil, errInvalidParameter("'%s' is not a valid taggable resource type for this operation.", rt)
		}
		for k, v := range spec.Tags("Tag") {
			lt.Tags[k] = v
		}
	}
	l.templates[lt.ID] = lt
	l.templateNames[name] = lt.ID
	if token != "" {
		l.templateTokens[token] = lt.ID
	}
	return answer(lt), nil
}

// lookupTemplate finds a template by id or name, as the request's parameters give them.
func (l *launchState) lookupTemplate(id, name string) (*LaunchTemplate, *APIError) {
	switch {
	case id != "":
		lt, ok := l.templates[id]
		if !ok {
			return nil, errLaunchTemplateIDNotFound(id)
		}
		return lt, nil
	case name != "":
		id, ok := l.templateNames[name]
		if !ok {
			return nil, errLaunchTemplateNameNotFound(name)
		}
		return l.templates[id], nil
	}
	return nil, errMissingParameter("LaunchTemplateId or LaunchTemplateName")
}

func (s *Server) describeLaunchTemplates(_ context.Context, q Query) (any, error) {
	l := s.launch
	ids := q.List("LaunchTemplateId")
	for _, name := range q.List("LaunchTemplateName") {
		id, ok := l.templateNames[name]
		if !ok {
			return nil, errLaunchTemplateNameNotFound(name)
		}
		ids = append(ids, id)
	}
	if len(ids) > 0 && q.Has("MaxResults") {
		return nil, errInvalidParameter("The parameter LaunchTemplateIds and LaunchTemplateNames cannot be used with the parameter maxResults")
	}
	selected, err := selectByID(ids, l.templates, errLaunchTemplateIDNotFound)
	if err != nil {
		return nil, err
	}
	matched, err := filterIDs(selected, func(id string) (bool, error) {
		lt := l.templates[id]
		return matchFilters(q.Filters(), lt.Tags, true, func(name string) ([]string, bool) {
			switch name {
			case "launch-template-name":
				return []string{lt.Name}, true
			case "create-time":
				return []string{formatEC2Time(lt.CreateTime)}, true
			}
			return nil, false
		})
	})
	if err != nil {
		return nil, err
	}
	pageIDs, next, err := page(matched, q, 1, 200)
	if err != nil {
		return nil, err
	}
	out := make([]launchTemplateXML, 0, len(pageIDs))
	for _, id := range pageIDs {
		out = append(out, launchTemplateInfo(l.templates[id]))
	}
	return struct {
		LaunchTemplates []launchTemplateXML `xml:"launchTemplates>item"`
		NextToken       string              `xml:"nextToken,omitempty"`
	}{out, next}, nil
}

func (s *Server) deleteLaunchTemplate(_ context.Context, q Query) (any, error) {
	l := s.launch
	lt, apiErr := l.lookupTemplate(q.Get("LaunchTemplateId"), q.Get("LaunchTemplateName"))
	if apiErr != nil {
		return nil, apiErr
	}
	delete(l.templates, lt.ID)
	delete(l.templateNames, lt.Name)
	for token, id := range l.templateTokens {
		if id == lt.ID {
			delete(l.templateTokens, token)
		}
	}
	return struct {
		LaunchTemplate launchTemplateXML `xml:"launchTemplate"`
	}{launchTemplateInfo(lt)}, nil
}

// instanceProfileARN returns the ARN of an instance profile named by name or ARN.
func instanceProfileARN(nameOrARN string) string {
	if strings.HasPrefix(nameOrARN, "arn:") {
		return nameOrARN
	}
	return "arn:aws:iam::" + AccountID + ":instance-profile/" + nameOrARN
}

// instanceProfileName returns the name of an instance profile named by name or ARN.
func instanceProfileName(nameOrARN string) string {
	return nameOrARN[strings.LastIndex(nameOrARN, "/")+1:]
}
