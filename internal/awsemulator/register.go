package awsemulator

// register wires every emulated action. Each area of the emulator registers its own actions
// and keeps its own state.
func (s *Server) register() {
	s.handleQuery(ServiceEC2, "DescribeAvailabilityZones", s.describeAvailabilityZones)
	s.handleQuery(ServiceEC2, "DescribeRegions", s.describeRegions)
	s.registerCatalog()
	s.registerResources()
	s.registerLaunch()
	s.registerPlacementGroups()
	s.registerSQS()
	s.registerEKS()
	s.registerARC()
	s.handleQuery(ServiceSTS, "GetCallerIdentity", s.getCallerIdentity)
}
