package awsemulator

import "time"

// registerResources seeds the region's subnets, security groups, images, capacity
// reservations, SSM parameters and IAM roles and instance profiles, and registers the actions
// that read and change them.
func (s *Server) registerResources() {
	s.resources = newResourceState(time.Now)
	s.resources.seedResources(s.Region, regions[s.Region], s.started)

	s.handleQuery(ServiceEC2, "DescribeVpcs", s.describeVpcs)
	s.handleQuery(ServiceEC2, "DescribeSubnets", s.describeSubnets)
	s.handleQuery(ServiceEC2, "DescribeSecurityGroups", s.describeSecurityGroups)
	s.handleQuery(ServiceEC2, "DescribeImages", s.describeImages)
	s.handleQuery(ServiceEC2, "DescribeCapacityReservations", s.describeCapacityReservations)

	s.handleJSON(ServiceSSM, "GetParameter", s.getParameter)
	s.handleJSON(ServiceSSM, "GetParameters", s.getParameters)
	s.handleJSON(ServiceSSM, "GetParametersByPath", s.getParametersByPath)

	s.handleQuery(ServiceIAM, "GetRole", s.getRole)
	s.handleQuery(ServiceIAM, "CreateInstanceProfile", s.createInstanceProfile)
	s.handleQuery(ServiceIAM, "GetInstanceProfile", s.getInstanceProfile)
	s.handleQuery(ServiceIAM, "DeleteInstanceProfile", s.deleteInstanceProfile)
	s.handleQuery(ServiceIAM, "AddRoleToInstanceProfile", s.addRoleToInstanceProfile)
	s.handleQuery(ServiceIAM, "RemoveRoleFromInstanceProfile", s.removeRoleFromInstanceProfile)
	s.handleQuery(ServiceIAM, "TagInstanceProfile", s.tagInstanceProfile)
	s.handleQuery(ServiceIAM, "UntagInstanceProfile", s.untagInstanceProfile)
	s.handleQuery(ServiceIAM, "ListInstanceProfiles", s.listInstanceProfiles)
	s.handleQuery(ServiceIAM, "ListInstanceProfilesForRole", s.listInstanceProfilesForRole)
}
