// Package catalogdata holds EC2 instance-type facts: shapes (vCPUs, memory, network interfaces,
// storage, accelerators), where each type is offered and what it costs on demand and on the
// spot market. It is data only, read by two users: the AWS emulator (internal/awsemulator)
// serves it through its EC2 and Pricing APIs, and cloudprovider/aws/pricing/gen writes its
// on-demand list prices into the pricing package's built-in fallback table.
//
// The facts come from AWS's public instance-type pages and price lists (us-east-1 and us-west-2
// Linux on-demand list prices, which are equal for the families here). Families are written as
// compact tables (families.go) and expanded once into InstanceType records; values AWS publishes
// per size (ENIs, instance store, GPUs, odd prices) are listed per size, regular ones (memory
// per vCPU, bandwidth per vCPU) are derived. Spot prices and per-zone availability are
// synthetic but deterministic, so tests can rely on them.
package catalogdata
