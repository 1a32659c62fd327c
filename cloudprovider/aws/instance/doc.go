// Package instance launches EC2 instances with instant CreateFleet requests, and finds and
// terminates them. Launches of the same shape that arrive together share one fleet (see
// BatchOptions and docs/aws.md, "Launch batching"). It speaks EC2's terms (fleet overrides,
// error codes, instance states); deciding what to launch, and what a refused offering means
// for scheduling, is the caller's.
package instance
