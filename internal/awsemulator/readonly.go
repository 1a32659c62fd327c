package awsemulator

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// accessKeyOf reads the access key ID from a SigV4 Authorization header.
var accessKeyOf = regexp.MustCompile(`Credential=([^/]+)/`)

// callerOf is the access key ID r is signed with, or "".
func callerOf(r *http.Request) string {
	if m := accessKeyOf.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		return m[1]
	}
	return ""
}

// readOnlyPrefixes name the calls that only read: what a read-only IAM policy
// (ec2:Describe*, pricing:GetProducts, ssm:GetParameter...) allows.
var readOnlyPrefixes = []string{"Describe", "Get", "List"}

// authorize refuses a call that is not read-only when it is signed with one of
// Options.ReadOnlyAccessKeys, as AWS refuses an identity whose policy grants only reads:
// joinery-scheduler plans with instance types and prices but must never launch or terminate.
func (s *Server) authorize(r *http.Request, action string) error {
	if len(s.readOnlyKeys) == 0 {
		return nil
	}
	m := accessKeyOf.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil || !slices.Contains(s.readOnlyKeys, m[1]) {
		return nil
	}
	if slices.ContainsFunc(readOnlyPrefixes, func(p string) bool { return strings.HasPrefix(action, p) }) {
		return nil
	}
	return &APIError{
		Code:    "UnauthorizedOperation",
		Message: fmt.Sprintf("You are not authorized to perform this operation: access key %s may only read (%s is not Describe*, Get* or List*).", m[1], action),
		Status:  http.StatusForbidden,
	}
}
