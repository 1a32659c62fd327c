// Package aws is the AWS provider's wiring, the one entry both binaries call with
// --cloud-provider=aws: the AWS flags (Settings: Karpenter's setting names, with Karpenter's
// environment variables as defaults), the aws.Config every SDK client is built from, New, which
// builds the CloudProvider on joinery-controller's manager with the provider's own controllers
// and loops, and NewInstanceTypeSource, which gives joinery-scheduler the same instance types
// and prices without launching anything.
//
// The provider's parts live in the packages below: amifamily (user data), nodeclass
// (EC2NodeClass resolution), instancetype and pricing, launchtemplate and instance (CreateFleet),
// provider (the CloudProvider), interruption (EventBridge messages), catalogdata (instance-type
// facts), and controllers/{nodeclass,interruption}. Its API is apis/aws/v1; its well-known
// labels are registered by instancetype at init.
package aws
