// Package instance launches EC2 instances with instant CreateFleet requests, and finds and
// terminates them. It speaks EC2's terms (fleet overrides, error codes, instance states);
// deciding what to launch, and what a refused offering means for scheduling, is the caller's.
package instance
