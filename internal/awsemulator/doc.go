// Package awsemulator runs an in-process AWS emulator that real aws-sdk-go-v2 clients talk to, the
// way net/http/httptest runs an HTTP server: tests point the SDK's BaseEndpoint at Server.URL
// and exercise joinery's AWS provider through the real wire protocols.
//
// One listener serves every service. The service is taken from the SigV4 credential scope of
// the request (ec2, iam, sts, ssm, pricing, sqs, eks, arc-zonal-shift); EC2, IAM and STS speak the query
// protocol (form POST with Action and Version, XML answers), SSM and Pricing JSON 1.1 and SQS
// JSON 1.0 (routed by X-Amz-Target), EKS and ARC zonal shift REST-JSON (routed by method and
// path). The account runs one EKS cluster (Options.Cluster), which eks:DescribeCluster
// describes and ARC zonal shifts can move away from a zone; tests start and cancel shifts with
// the SDK itself, as an operator would, and start and end AWS's autoshifts with
// Server.StartAutoshift / EndAutoshift (or the admin API), as AWS's telemetry would. State is kept in memory and is consistent across
// calls; faults (errors, throttling, latency) can be injected per service and action.
package awsemulator
