package awsemulator

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// TestReadOnlyAccessKeys: a read-only key describes but cannot launch or terminate; another
// key is not affected.
func TestReadOnlyAccessKeys(t *testing.T) {
	srv := NewServer(Options{ReadOnlyAccessKeys: []string{"AKIAREADONLY"}})
	defer srv.Close()
	clientWith := func(key string) *ec2.Client {
		cfg := srv.Config()
		cfg.Credentials = credentials.NewStaticCredentialsProvider(key, "secret", "")
		return ec2.NewFromConfig(cfg)
	}
	run := func(c *ec2.Client) error {
		_, err := c.RunInstances(context.Background(), &ec2.RunInstancesInput{
			MinCount: aws.Int32(1), MaxCount: aws.Int32(1), InstanceType: ec2types.InstanceTypeM5Large, ImageId: aws.String("ami-none"),
		})
		return err
	}
	tests := []struct {
		name     string
		key      string
		call     func(*ec2.Client) error
		wantDeny bool
	}{
		{"read-only key describes", "AKIAREADONLY", func(c *ec2.Client) error {
			_, err := c.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{})
			return err
		}, false},
		{"read-only key cannot run instances", "AKIAREADONLY", run, true},
		{"read-only key cannot terminate", "AKIAREADONLY", func(c *ec2.Client) error {
			_, err := c.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			return err
		}, true},
		{"another key is not refused", "AKIAWRITER", run, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(clientWith(tt.key))
			var apiErr smithy.APIError
			denied := errors.As(err, &apiErr) && apiErr.ErrorCode() == "UnauthorizedOperation"
			if denied != tt.wantDeny {
				t.Errorf("err %v: denied %t, want %t", err, denied, tt.wantDeny)
			}
			if !tt.wantDeny && tt.key == "AKIAREADONLY" && err != nil {
				t.Errorf("a read by the read-only key failed: %v", err)
			}
		})
	}
}
