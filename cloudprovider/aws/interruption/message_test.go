package interruption

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// The bodies below have the shapes AWS documents for these events as EventBridge delivers them
// to an SQS target.
const (
	spotWarning = `{
  "version": "0",
  "id": "12345678-1234-1234-1234-123456789012",
  "detail-type": "EC2 Spot Instance Interruption Warning",
  "source": "aws.ec2",
  "account": "123456789012",
  "time": "2021-02-18T16:36:09Z",
  "region": "us-east-2",
  "resources": ["arn:aws:ec2:us-east-2a:instance/i-1234567890abcdef0"],
  "detail": {
    "instance-id": "i-1234567890abcdef0",
    "instance-action": "terminate"
  }
}`
	rebalance = `{
  "version": "0",
  "id": "12345678-1234-1234-1234-123456789012",
  "detail-type": "EC2 Instance Rebalance Recommendation",
  "source": "aws.ec2",
  "account": "123456789012",
  "time": "2021-02-18T16:36:09Z",
  "region": "us-east-2",
  "resources": ["arn:aws:ec2:us-east-2a:instance/i-1234567890abcdef0"],
  "detail": {
    "instance-id": "i-1234567890abcdef0"
  }
}`
	stateChangeTemplate = `{
  "version": "0",
  "id": "7bf73129-1428-4cd3-a780-95db273d1602",
  "detail-type": "EC2 Instance State-change Notification",
  "source": "aws.ec2",
  "account": "123456789012",
  "time": "2021-11-11T21:29:54Z",
  "region": "us-east-1",
  "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"],
  "detail": {
    "instance-id": "i-abcd1111",
    "state": "STATE"
  }
}`
	healthScheduledChange = `{
  "version": "0",
  "id": "7bf73129-1428-4cd3-a780-95db273d1602",
  "detail-type": "AWS Health Event",
  "source": "aws.health",
  "account": "123456789012",
  "time": "2023-01-27T01:43:21Z",
  "region": "us-west-2",
  "resources": ["i-abcd1111", "i-abcd2222"],
  "detail": {
    "eventArn": "arn:aws:health:us-west-2::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_ABC123-DEF456",
    "service": "EC2",
    "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
    "eventTypeCategory": "scheduledChange",
    "startTime": "Sat, 11 Feb 2023 01:00:00 GMT",
    "endTime": "Sat, 11 Feb 2023 02:00:00 GMT",
    "eventDescription": [{
      "language": "en_US",
      "latestDescription": "EC2 has detected degradation of the underlying hardware hosting your Amazon EC2 instance."
    }],
    "affectedEntities": [{"entityValue": "i-abcd1111"}, {"entityValue": "i-abcd2222"}]
  }
}`
	healthIssue = `{
  "version": "0",
  "id": "121345678-1234-1234-1234-123456789012",
  "detail-type": "AWS Health Event",
  "source": "aws.health",
  "account": "123456789012",
  "time": "2016-06-05T06:27:57Z",
  "region": "us-west-2",
  "resources": [],
  "detail": {
    "eventArn": "arn:aws:health:us-west-2::event/AWS_ELASTICLOADBALANCING_API_ISSUE_90353408594353980",
    "service": "ELASTICLOADBALANCING",
    "eventTypeCode": "AWS_ELASTICLOADBALANCING_API_ISSUE",
    "eventTypeCategory": "issue",
    "startTime": "Sat, 04 Jun 2016 05:01:10 GMT",
    "endTime": "Sat, 04 Jun 2016 05:30:57 GMT",
    "eventDescription": [{"language": "en_US", "latestDescription": "A description of the event will be provided here"}]
  }
}`
	s3TestEvent = `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2014-10-13T15:57:02.089Z","Bucket":"bucketname","RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}`
)

func stateChange(state string) string {
	return strings.ReplaceAll(stateChangeTemplate, "STATE", state)
}

func TestParse(t *testing.T) {
	tests := []struct {
		name          string
		body          string
		wantKind      Kind
		wantInstances []string
		wantState     string
		wantTime      time.Time
	}{
		{name: "spot interruption warning", body: spotWarning, wantKind: SpotInterruption, wantInstances: []string{"i-1234567890abcdef0"}, wantTime: time.Date(2021, 2, 18, 16, 36, 9, 0, time.UTC)},
		{name: "rebalance recommendation", body: rebalance, wantKind: RebalanceRecommendation, wantInstances: []string{"i-1234567890abcdef0"}},
		{name: "stopping", body: stateChange("stopping"), wantKind: InstanceStopped, wantInstances: []string{"i-abcd1111"}, wantState: "stopping"},
		{name: "stopped", body: stateChange("stopped"), wantKind: InstanceStopped, wantInstances: []string{"i-abcd1111"}, wantState: "stopped"},
		{name: "shutting-down", body: stateChange("shutting-down"), wantKind: InstanceTerminated, wantInstances: []string{"i-abcd1111"}, wantState: "shutting-down"},
		{name: "terminated", body: stateChange("terminated"), wantKind: InstanceTerminated, wantInstances: []string{"i-abcd1111"}, wantState: "terminated"},
		{name: "running is no action", body: stateChange("running"), wantKind: NoOp, wantInstances: []string{"i-abcd1111"}, wantState: "running"},
		{name: "pending is no action", body: stateChange("pending"), wantKind: NoOp, wantInstances: []string{"i-abcd1111"}, wantState: "pending"},
		{name: "EC2 scheduled change", body: healthScheduledChange, wantKind: ScheduledChange, wantInstances: []string{"i-abcd1111", "i-abcd2222"}, wantTime: time.Date(2023, 1, 27, 1, 43, 21, 0, time.UTC)},
		{name: "health issue of another service", body: healthIssue, wantKind: NoOp},
		{name: "scheduled change of another service", body: strings.ReplaceAll(healthScheduledChange, `"service": "EC2"`, `"service": "RDS"`), wantKind: NoOp},
		{name: "EC2 scheduled change of a dedicated host", body: strings.ReplaceAll(healthScheduledChange, `"entityValue": "i-abcd`, `"entityValue": "h-abcd`), wantKind: NoOp},
		{name: "unknown EC2 detail-type", body: strings.ReplaceAll(rebalance, "EC2 Instance Rebalance Recommendation", "EC2 Fast Launch State-change Notification"), wantKind: NoOp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := Parse(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Kind != tt.wantKind {
				t.Errorf("kind = %s, want %s", msg.Kind, tt.wantKind)
			}
			if tt.wantKind != NoOp && !slices.Equal(msg.InstanceIDs, tt.wantInstances) {
				t.Errorf("instances = %v, want %v", msg.InstanceIDs, tt.wantInstances)
			}
			if msg.State != tt.wantState {
				t.Errorf("state = %q, want %q", msg.State, tt.wantState)
			}
			if !tt.wantTime.IsZero() && !msg.Time.Equal(tt.wantTime) {
				t.Errorf("time = %s, want %s", msg.Time, tt.wantTime)
			}
			if msg.ID == "" {
				t.Error("no event id")
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"not JSON", "hello"},
		{"empty", ""},
		{"a JSON array", `[1,2]`},
		{"not an EventBridge event", s3TestEvent},
		{"spot warning without instance-id", strings.ReplaceAll(spotWarning, `"instance-id": "i-1234567890abcdef0",`, "")},
		{"state change with a non-instance id", strings.ReplaceAll(stateChange("stopping"), `"i-abcd1111"`, `"vol-1"`)},
		{"detail of the wrong type", strings.ReplaceAll(rebalance, `{
    "instance-id": "i-1234567890abcdef0"
  }`, `"i-1234567890abcdef0"`)},
		{"time that is not RFC 3339", strings.ReplaceAll(spotWarning, "2021-02-18T16:36:09Z", "yesterday")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := Parse(tt.body)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse = %+v, %v; want ErrMalformed", msg, err)
			}
		})
	}
}
