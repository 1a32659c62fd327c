package awsemulator

import "context"

// callerIdentityXML is sts:GetCallerIdentity's answer.
type callerIdentityXML struct {
	Account string `xml:"Account"`
	Arn     string `xml:"Arn"`
	UserID  string `xml:"UserId"`
}

// getCallerIdentity names the account every caller of the emulator belongs to; clients learn
// the account ID (and so the ARNs of its resources, such as the cluster's) from it. Like AWS's,
// it needs no permission.
func (s *Server) getCallerIdentity(context.Context, Query) (any, error) {
	return callerIdentityXML{Account: AccountID, Arn: "arn:aws:iam::" + AccountID + ":user/awsemulator", UserID: "AIDAAWSEMULATOR"}, nil
}
