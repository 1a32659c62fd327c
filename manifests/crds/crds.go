// Package crds embeds joinery's CustomResourceDefinitions as make generate writes them
// (controller-gen over apis/), so that tools that run without a cluster (the joinery CLI)
// validate objects against the same schemas and CEL rules the API server enforces.
package crds

import "embed"

// FS holds the CRDs, one YAML file each.
//
//go:embed *.yaml
var FS embed.FS
