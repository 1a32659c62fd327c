package interruption

import (
	"context"
	"errors"
	"net"
	"net/http"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// errorClass says how a failed SQS call should be reported; every class is retried, since the
// queue, the permissions or the network may all be fixed while the controller runs.
type errorClass int

const (
	errorOther        errorClass = iota
	errorThrottled               // SQS or KMS asked the caller to slow down
	errorTransient               // a 5xx or a network failure
	errorQueueMissing            // the queue does not exist (its URL is resolved again)
	errorAccessDenied            // credentials or IAM permissions are wrong
)

// SQS- and KMS-specific codes that awserr's service-wide lists do not carry.
var (
	sqsThrottlingCodes = map[string]bool{
		"KMS.ThrottlingException": true, "KmsThrottled": true, "OverLimit": true,
	}
	sqsAccessDeniedCodes = map[string]bool{
		"InvalidSecurity": true, "KMS.AccessDeniedException": true, "KmsAccessDenied": true,
	}
)

func classify(err error) errorClass {
	if err == nil || errors.Is(err, context.Canceled) {
		return errorOther
	}
	var missing *sqstypes.QueueDoesNotExist
	if errors.As(err, &missing) {
		return errorQueueMissing
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch code := apiErr.ErrorCode(); {
		case code == "AWS.SimpleQueueService.NonExistentQueue" || code == "QueueDoesNotExist":
			return errorQueueMissing
		case awserr.IsThrottled(err) || sqsThrottlingCodes[code]:
			return errorThrottled
		case awserr.IsUnauthorized(err) || sqsAccessDeniedCodes[code]:
			return errorAccessDenied
		}
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() >= http.StatusInternalServerError {
		return errorTransient
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
		return errorTransient
	}
	return errorOther
}
