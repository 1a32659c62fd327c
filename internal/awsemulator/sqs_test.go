package awsemulator

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

func newSQSFixture(t *testing.T) (*Server, *sqs.Client, string) {
	t.Helper()
	srv := NewServer(Options{})
	t.Cleanup(srv.Close)
	client := sqs.NewFromConfig(srv.Config())
	out, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("interruptions")})
	if err != nil {
		t.Fatal(err)
	}
	return srv, client, aws.ToString(out.QueueUrl)
}

func TestSQSSendReceiveDelete(t *testing.T) {
	srv, client, url := newSQSFixture(t)
	ctx := context.Background()

	got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("interruptions")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(got.QueueUrl) != url {
		t.Fatalf("GetQueueUrl = %s, want %s", aws.ToString(got.QueueUrl), url)
	}
	// The SDK checks MD5OfMessageBody and MD5OfBody, so these calls also check the digests.
	for i := range 3 {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("message " + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if n := approximateMessages(t, client, url); n != 3 {
		t.Fatalf("ApproximateNumberOfMessages = %d, want 3", n)
	}

	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: &url, MaxNumberOfMessages: 2,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 2 || aws.ToString(out.Messages[0].Body) != "message 0" || aws.ToString(out.Messages[1].Body) != "message 1" {
		t.Fatalf("received %+v, want messages 0 and 1", out.Messages)
	}
	sent, err := strconv.ParseInt(out.Messages[0].Attributes["SentTimestamp"], 10, 64)
	if err != nil || time.Since(time.UnixMilli(sent)) > time.Minute {
		t.Errorf("SentTimestamp = %q", out.Messages[0].Attributes["SentTimestamp"])
	}
	// Received messages are in flight: only the third is visible.
	if n := approximateMessages(t, client, url); n != 1 {
		t.Errorf("visible after receive = %d, want 1", n)
	}
	for _, m := range out.Messages {
		if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	if visible, inFlight, _ := srv.QueueDepth("interruptions"); visible != 1 || inFlight != 0 {
		t.Errorf("depth after delete = %d visible, %d in flight; want 1, 0", visible, inFlight)
	}
	// Deleting again with the same, now stale, handle succeeds as in SQS.
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
		t.Errorf("deleting a deleted message: %v", err)
	}
}

func TestSQSVisibilityTimeout(t *testing.T) {
	srv, client, url := newSQSFixture(t)
	ctx := context.Background()
	if _, err := srv.SendEvent("interruptions", "hello"); err != nil {
		t.Fatal(err)
	}
	first, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, VisibilityTimeout: 1})
	if err != nil || len(first.Messages) != 1 {
		t.Fatalf("first receive: %v, %d messages", err, len(first.Messages))
	}
	// Invisible now; a long poll returns it once the timeout lapses.
	again, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 5, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
	if err != nil || len(again.Messages) != 1 {
		t.Fatalf("receive after the visibility timeout: %v, %d messages", err, len(again.Messages))
	}
	if c := again.Messages[0].Attributes["ApproximateReceiveCount"]; c != "2" {
		t.Errorf("ApproximateReceiveCount = %s, want 2", c)
	}
	// The first receive's handle is stale: deleting with it leaves the message.
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: first.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if _, inFlight, _ := srv.QueueDepth("interruptions"); inFlight != 1 {
		t.Errorf("in flight after deleting with a stale handle = %d, want 1", inFlight)
	}
}

func TestSQSLongPoll(t *testing.T) {
	srv, client, url := newSQSFixture(t)

	t.Run("wakes when a message arrives", func(t *testing.T) {
		var wg sync.WaitGroup
		var out *sqs.ReceiveMessageOutput
		var err error
		wg.Go(func() {
			out, err = client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 20})
		})
		// Other calls proceed while the poll waits (it must not hold the emulator's lock).
		time.Sleep(100 * time.Millisecond)
		if _, sendErr := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("late")}); sendErr != nil {
			t.Fatal(sendErr)
		}
		wg.Wait()
		if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "late" {
			t.Fatalf("long poll = %v, %+v", err, out)
		}
	})

	t.Run("ends with the caller's context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 20})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the context's deadline", err)
		}
		// The emulator is still responsive afterwards.
		if _, err := srv.SendEvent("interruptions", "after"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("returns empty after WaitTimeSeconds", func(t *testing.T) {
		empty := NewServer(Options{})
		defer empty.Close()
		c := sqs.NewFromConfig(empty.Config())
		q, err := empty.CreateQueue("empty")
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q, WaitTimeSeconds: 1})
		if err != nil || len(out.Messages) != 0 {
			t.Fatalf("empty poll = %v, %d messages", err, len(out.Messages))
		}
	})
}

func TestSQSErrors(t *testing.T) {
	_, client, url := newSQSFixture(t)
	ctx := context.Background()
	missing := url + "-missing"
	tests := []struct {
		name     string
		call     func() error
		wantCode string
		wantType any
	}{
		{
			name: "GetQueueUrl of an unknown queue",
			call: func() error {
				_, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
				return err
			},
			wantCode: "AWS.SimpleQueueService.NonExistentQueue", wantType: new(*sqstypes.QueueDoesNotExist),
		},
		{
			name: "ReceiveMessage from an unknown queue URL",
			call: func() error {
				_, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &missing})
				return err
			},
			wantCode: "AWS.SimpleQueueService.NonExistentQueue", wantType: new(*sqstypes.QueueDoesNotExist),
		},
		{
			name: "DeleteMessage with a malformed receipt handle",
			call: func() error {
				_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: aws.String("not a handle")})
				return err
			},
			wantCode: "ReceiptHandleIsInvalid", wantType: new(*sqstypes.ReceiptHandleIsInvalid),
		},
		{
			name: "ReceiveMessage with too many messages asked",
			call: func() error {
				_, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 11})
				return err
			},
			wantCode: "InvalidParameterValue",
		},
		{
			name: "CreateQueue again with different attributes",
			call: func() error {
				_, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("interruptions"), Attributes: map[string]string{"VisibilityTimeout": "5"}})
				return err
			},
			wantCode: "QueueAlreadyExists", wantType: new(*sqstypes.QueueNameExists),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.wantCode {
				t.Fatalf("err = %v, want code %s", err, tt.wantCode)
			}
			if tt.wantType != nil && !errors.As(err, tt.wantType) {
				t.Errorf("err = %T, want %T", apiErr, tt.wantType)
			}
		})
	}
}

func TestSQSThrottlingIsRetriedByTheSDK(t *testing.T) {
	srv, client, url := newSQSFixture(t)
	srv.Inject(SQSThrottling.For(ServiceSQS, "ReceiveMessage", 2))
	if _, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url}); err != nil {
		t.Fatalf("throttled twice: %v", err)
	}
	if n := srv.Calls(ServiceSQS, "ReceiveMessage"); n != 3 {
		t.Errorf("calls = %d, want 3", n)
	}
}

func TestEventBodies(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	tests := []struct {
		name       string
		body       string
		detailType string
		source     string
		detail     map[string]any
	}{
		{"spot interruption", srv.SpotInterruptionWarning("i-0abc"), "EC2 Spot Instance Interruption Warning", "aws.ec2", map[string]any{"instance-id": "i-0abc", "instance-action": "terminate"}},
		{"rebalance", srv.RebalanceRecommendation("i-0abc"), "EC2 Instance Rebalance Recommendation", "aws.ec2", map[string]any{"instance-id": "i-0abc"}},
		{"state change", srv.InstanceStateChange("i-0abc", InstanceStateStopping), "EC2 Instance State-change Notification", "aws.ec2", map[string]any{"instance-id": "i-0abc", "state": "stopping"}},
		{"scheduled change", srv.ScheduledChange("i-0abc", "i-0def"), "AWS Health Event", "aws.health", map[string]any{
			"service": "EC2", "eventTypeCategory": "scheduledChange",
			"affectedEntities": []any{map[string]any{"entityValue": "i-0abc"}, map[string]any{"entityValue": "i-0def"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var event map[string]any
			if err := json.Unmarshal([]byte(tt.body), &event); err != nil {
				t.Fatal(err)
			}
			if event["detail-type"] != tt.detailType || event["source"] != tt.source || event["version"] != "0" || event["region"] != srv.Region || event["account"] != AccountID {
				t.Errorf("envelope = %v", event)
			}
			if _, err := time.Parse(time.RFC3339, event["time"].(string)); err != nil {
				t.Errorf("time: %v", err)
			}
			detail := event["detail"].(map[string]any)
			for key, want := range tt.detail {
				got, _ := json.Marshal(detail[key])
				wantJSON, _ := json.Marshal(want)
				if string(got) != string(wantJSON) {
					t.Errorf("detail.%s = %s, want %s", key, got, wantJSON)
				}
			}
		})
	}
}

func approximateMessages(t *testing.T, client *sqs.Client, url string) int {
	t.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: &url, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
