package awstest

// registerResources registers subnets, security groups, images, capacity reservations, SSM
// parameters and IAM instance profiles. (Owned by the EC2NodeClass resolution work; issue 6.)
func (s *Server) registerResources() {}
