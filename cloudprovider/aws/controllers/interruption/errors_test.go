package interruption

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func TestClassify(t *testing.T) {
	status := func(code int) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: errors.New("boom")}
	}
	tests := []struct {
		name string
		err  error
		want errorClass
	}{
		{"queue does not exist, typed", fmt.Errorf("receiving: %w", &sqstypes.QueueDoesNotExist{}), errorQueueMissing},
		{"queue does not exist, query code", &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue"}, errorQueueMissing},
		{"SQS throttling", &smithy.GenericAPIError{Code: "RequestThrottled"}, errorThrottled},
		{"KMS throttling", &smithy.GenericAPIError{Code: "KMS.ThrottlingException"}, errorThrottled},
		{"access denied", fmt.Errorf("x: %w", &smithy.GenericAPIError{Code: "AccessDenied"}), errorAccessDenied},
		{"bad credentials", &smithy.GenericAPIError{Code: "InvalidClientTokenId"}, errorAccessDenied},
		{"5xx", status(http.StatusServiceUnavailable), errorTransient},
		{"4xx without a known code", status(http.StatusBadRequest), errorOther},
		{"network", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, errorTransient},
		{"timeout", context.DeadlineExceeded, errorTransient},
		{"cancelled", context.Canceled, errorOther},
		{"unknown", errors.New("something else"), errorOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.err); got != tt.want {
				t.Errorf("classify(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}
