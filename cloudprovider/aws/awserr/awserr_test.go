package awserr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		code string
		want error
	}{
		{"RequestLimitExceeded", ErrThrottled},
		{"ThrottlingException", ErrThrottled},
		{"UnauthorizedOperation", ErrUnauthorized},
		{"AccessDeniedException", ErrUnauthorized},
		{"InvalidSubnetID.NotFound", ErrNotFound},
		{"ParameterNotFound", ErrNotFound},
		{"InvalidParameterValue", nil},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			err := fmt.Errorf("describing: %w", &smithy.GenericAPIError{Code: tt.code, Message: "m"})
			got := Classify(err)
			for _, kind := range []error{ErrThrottled, ErrUnauthorized, ErrNotFound} {
				if errors.Is(got, kind) != (kind == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", got, kind, !(kind == tt.want))
				}
			}
			if Code(got) != tt.code {
				t.Errorf("the code is lost: %q", Code(got))
			}
		})
	}
	if Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
	plain := errors.New("dial tcp: refused")
	if Classify(plain) != plain {
		t.Error("a non-API error must pass unchanged")
	}
}
