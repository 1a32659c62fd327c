package awsemulator

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SQS defaults and limits, AWS's.
const (
	sqsDefaultVisibilityTimeout = 30 * time.Second
	sqsMaxVisibilityTimeout     = 12 * time.Hour
	sqsMaxWaitTime              = 20 * time.Second
	sqsMaxMessages              = 10
	sqsDefaultRetention         = 4 * 24 * time.Hour
	sqsMaxMessageSize           = 262144
)

// SQSThrottling is SQS's throttling answer; the SDK retries it.
var SQSThrottling = Fault{Service: ServiceSQS, Code: "RequestThrottled", Message: "Request is throttled.", Status: http.StatusBadRequest}

// sqsQueryErrorCodes are the legacy (query protocol) codes SQS sends beside the JSON error type
// in X-Amzn-Query-Error, where they differ; the SDK reports them as the error's code.
var sqsQueryErrorCodes = map[string]string{
	"QueueDoesNotExist":            "AWS.SimpleQueueService.NonExistentQueue",
	"QueueNameExists":              "QueueAlreadyExists",
	"PurgeQueueInProgress":         "AWS.SimpleQueueService.PurgeQueueInProgress",
	"MessageNotInflight":           "AWS.SimpleQueueService.MessageNotInflight",
	"UnsupportedOperation":         "AWS.SimpleQueueService.UnsupportedOperation",
	"TooManyEntriesInBatchRequest": "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
	"EmptyBatchRequest":            "AWS.SimpleQueueService.EmptyBatchRequest",
	"BatchEntryIdsNotDistinct":     "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
	"InvalidBatchEntryId":          "AWS.SimpleQueueService.InvalidBatchEntryId",
}

// sqsQueryError is the X-Amzn-Query-Error header value for an SQS error: "<code>;Sender" or
// "<code>;Receiver".
func sqsQueryError(apiErr *APIError) string {
	code, ok := sqsQueryErrorCodes[apiErr.Code]
	if !ok {
		code = apiErr.Code
	}
	return code + ";" + apiErr.faultType()
}

// sqsState holds the emulated standard queues. Guarded by Server.mu.
type sqsState struct {
	queues  map[string]*sqsQueue // by name
	nextID  int64
	arrived chan struct{} // closed (and replaced) when a message is sent, to wake long polls
}

type sqsQueue struct {
	name       string
	url        string
	created    time.Time
	visibility time.Duration
	wait       time.Duration // ReceiveMessageWaitTimeSeconds
	attributes map[string]string
	messages   []*sqsMessage // in the order they were sent
}

type sqsMessage struct {
	id           string
	body         string
	sent         time.Time
	visibleAt    time.Time
	receives     int       // ApproximateReceiveCount; also versions the receipt handle
	firstReceive time.Time // zero until received
}

func newSQSState() *sqsState {
	return &sqsState{queues: map[string]*sqsQueue{}, arrived: make(chan struct{})}
}

func (s *Server) registerSQS() {
	s.sqs = newSQSState()
	s.handleJSON(ServiceSQS, "CreateQueue", s.sqsCreateQueue)
	s.handleJSON(ServiceSQS, "GetQueueUrl", s.sqsGetQueueURL)
	s.handleJSON(ServiceSQS, "GetQueueAttributes", s.sqsGetQueueAttributes)
	s.handleJSON(ServiceSQS, "SendMessage", s.sqsSendMessage)
	s.handleJSON(ServiceSQS, "ReceiveMessage", s.sqsReceiveMessage)
	s.handleJSON(ServiceSQS, "DeleteMessage", s.sqsDeleteMessage)
	s.handleJSON(ServiceSQS, "DeleteMessageBatch", s.sqsDeleteMessageBatch)
}

var sqsQueueName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

func errQueueDoesNotExist() *APIError {
	return &APIError{Code: "QueueDoesNotExist", Message: "The specified queue does not exist."}
}

func decodeSQS(body json.RawMessage, in any) error {
	if err := json.Unmarshal(body, in); err != nil {
		return &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("cannot decode the request: %v", err)}
	}
	return nil
}

// queueByURL finds the queue a QueueUrl names: <endpoint>/<account>/<name>. Callers hold s.mu.
func (s *Server) queueByURL(queueURL string) (*sqsQueue, error) {
	if queueURL == "" {
		return nil, &APIError{Code: "MissingParameter", Message: "The request must contain the parameter QueueUrl."}
	}
	u, err := url.Parse(queueURL)
	if err != nil {
		return nil, &APIError{Code: "InvalidAddress", Message: fmt.Sprintf("The address %s is not valid for this endpoint.", queueURL)}
	}
	account, name, ok := strings.Cut(strings.Trim(u.Path, "/"), "/")
	if !ok || account != AccountID {
		return nil, errQueueDoesNotExist()
	}
	q, ok := s.sqs.queues[name]
	if !ok {
		return nil, errQueueDoesNotExist()
	}
	return q, nil
}

// queueAttributes applies CreateQueue's attributes; only those the emulator honours are
// accepted, so a test cannot rely on one it ignores.
func applyQueueAttributes(q *sqsQueue, attrs map[string]string) error {
	for name, value := range attrs {
		switch name {
		case "VisibilityTimeout", "ReceiveMessageWaitTimeSeconds":
			secs, err := strconv.Atoi(value)
			limit := sqsMaxVisibilityTimeout
			if name == "ReceiveMessageWaitTimeSeconds" {
				limit = sqsMaxWaitTime
			}
			if err != nil || secs < 0 || time.Duration(secs)*time.Second > limit {
				return &APIError{Code: "InvalidAttributeValue", Message: fmt.Sprintf("Invalid value for the parameter %s.", name)}
			}
			if name == "VisibilityTimeout" {
				q.visibility = time.Duration(secs) * time.Second
			} else {
				q.wait = time.Duration(secs) * time.Second
			}
		case "MessageRetentionPeriod", "Policy", "SqsManagedSseEnabled", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds":
			// Stored and reported; retention never matters within a test's lifetime.
		default:
			return &APIError{Code: "InvalidAttributeName", Message: fmt.Sprintf("Unknown Attribute %s.", name)}
		}
		q.attributes[name] = value
	}
	return nil
}

func (s *Server) sqsCreateQueue(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		QueueName  string            `json:"QueueName"`
		Attributes map[string]string `json:"Attributes"`
	}
	if err := decodeSQS(body, &in); err != nil {
		return nil, err
	}
	if !sqsQueueName.MatchString(in.QueueName) {
		return nil, &APIError{Code: "InvalidParameterValue", Message: "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"}
	}
	if existing, ok := s.sqs.queues[in.QueueName]; ok {
		for name, value := range in.Attributes {
			if existing.attributes[name] != value {
				return nil, &APIError{Code: "QueueNameExists", Message: fmt.Sprintf("A queue already exists with the same name and a different value for attribute %s", name)}
			}
		}
		return map[string]string{"QueueUrl": existing.url}, nil
	}
	q := &sqsQueue{
		name:       in.QueueName,
		url:        fmt.Sprintf("%s/%s/%s", s.URL, AccountID, in.QueueName),
		created:    time.Now(),
		visibility: sqsDefaultVisibilityTimeout,
		attributes: map[string]string{},
	}
	if err := applyQueueAttributes(q, in.Attributes); err != nil {
		return nil, err
	}
	s.sqs.queues[q.name] = q
	return map[string]string{"QueueUrl": q.url}, nil
}

func (s *Server) sqsGetQueueURL(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		QueueName string `json:"QueueName"`
		Owner     string `json:"QueueOwnerAWSAccountId"`
	}
	if err := decodeSQS(body, &in); err != nil {
		return nil, err
	}
	q, ok := s.sqs.queues[in.QueueName]
	if !ok || (in.Owner != "" && in.Owner != AccountID) {
		return nil, errQueueDoesNotExist()
	}
	return map[string]string{"QueueUrl": q.url}, nil
}

func (s *Server) sqsGetQueueAttributes(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		QueueURL       string   `json:"QueueUrl"`
		AttributeNames []string `json:"AttributeNames"`
	}
	if err := decodeSQS(body, &in); err != nil {
		return nil, err
	}
	q, err := s.queueByURL(in.QueueURL)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	visible, inFlight := q.counts(now)
	all := map[string]string{
		"QueueArn":                              fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.Region, AccountID, q.name),
		"ApproximateNumberOfMessages":           strconv.Itoa(visible),
		"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(inFlight),
		"ApproximateNumberOfMessagesDelayed":    "0",
		"CreatedTimestamp":                      strconv.FormatInt(q.created.Unix(), 10),
		"LastModifiedTimestamp":                 strconv.FormatInt(q.created.Unix(), 10),
		"VisibilityTimeout":                     strconv.Itoa(int(q.visibility / time.Second)),
		"ReceiveMessageWaitTimeSeconds":         strconv.Itoa(int(q.wait / time.Second)),
		"MaximumMessageSize":                    strconv.Itoa(sqsMaxMessageSize),
		"MessageRetentionPeriod":                strconv.Itoa(int(sqsDefaultRetention / time.Second)),
		"DelaySeconds":                          "0",
		"SqsManagedSseEnabled":                  "true",
	}
	for name, value := range q.attributes {
		all[name] = value
	}
	out := map[string]string{}
	for _, name := range in.AttributeNames {
		if name == "All" {
			out = all
			break
		}
		value, ok := all[name]
		if !ok {
			return nil, &APIError{Code: "InvalidAttributeName", Message: fmt.Sprintf("Unknown Attribute %s.", name)}
		}
		out[name] = value
	}
	return map[string]any{"Attributes": out}, nil
}

// counts returns how many messages are visible and how many are in flight at now.
func (q *sqsQueue) counts(now time.Time) (visible, inFlight int) {
	for _, m := range q.messages {
		if m.visibleAt.After(now) {
			inFlight++
		} else {
			visible++
		}
	}
	return visible, inFlight
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// validMessageBody reports whether body uses only the characters SQS accepts: #x9 | #xA | #xD
// | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
func validMessageBody(body string) bool {
	for _, r := range body {
		ok := r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
		if !ok {
			return false
		}
	}
	return true
}

func (s *Server) sqsSendMessage(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		QueueURL          string          `json:"QueueUrl"`
		MessageBody       *string         `json:"MessageBody"`
		DelaySeconds      int             `json:"DelaySeconds"`
		MessageAttributes json.RawMessage `json:"MessageAttributes"`
	}
	if err := decodeSQS(body, &in); err != nil {
		return nil, err
	}
	q, err := s.queueByURL(in.QueueURL)
	if err != nil {
		return nil, err
	}
	if len(in.MessageAttributes) > 0 && string(in.MessageAttributes) != "{}" {
		return nil, &APIError{Code: "UnsupportedOperation", Message: "awsemulator does not emulate message attributes"}
	}
	id, err := s.enqueue(q, in.MessageBody, time.Duration(in.DelaySeconds)*time.Second)
	if err != nil {
		return nil, err
	}
	return map[string]string{"MessageId": id, "MD5OfMessageBody": md5Hex(*in.MessageBody)}, nil
}

// enqueue adds a message and wakes long polls. Callers hold s.mu.
func (s *Server) enqueue(q *sqsQueue, body *string, delay time.Duration) (string, error) {
	if body == nil || *body == "" {
		return "", &APIError{Code: "MissingParameter", Message: "The request must contain the parameter MessageBody."}
	}
	if len(*body) > sqsMaxMessageSize {
		return "", &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", sqsMaxMessageSize)}
	}
	if !validMessageBody(*body) {
		return "", &APIError{Code: "InvalidMessageContents", Message: "Invalid characters found."}
	}
	if delay < 0 || delay > 15*time.Minute {
		return "", &APIError{Code: "InvalidParameterValue", Message: "Value for parameter DelaySeconds is invalid. Reason: must be between 0 and 900."}
	}
	s.sqs.nextID++
	now := time.Now()
	m := &sqsMessage{
		id:        fmt.Sprintf("5fea7756-0ea4-451a-a703-%012d", s.sqs.nextID),
		body:      *body,
		sent:      now,
		visibleAt: now.Add(delay),
	}
	q.messages = append(q.messages, m)
	close(s.sqs.arrived)
	s.sqs.arrived = make(chan struct{})
	return m.id, nil
}

type sqsMessageJSON struct {
	MessageID     string            `json:"MessageId"`
	ReceiptHandle string            `json:"ReceiptHandle"`
	MD5OfBody     string            `json:"MD5OfBody"`
	Body          string            `json:"Body"`
	Attributes    map[string]string `json:"Attributes,omitempty"`
}

// receiptHandle names one receive of a message; a later receive makes earlier handles stale.
func receiptHandle(q *sqsQueue, m *sqsMessage) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s|%s|%d", q.name, m.id, m.receives))
}

func parseReceiptHandle(handle string) (queue, id string, receive int, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(handle)
	if err != nil {
		return "", "", 0, false
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		return "", "", 0, false
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil {
		return "", "", 0, false
	}
	return parts[0], parts[1], n, true
}

// sqsSystemAttributes are the message attributes ReceiveMessage can return.
var sqsSystemAttributes = []string{"SentTimestamp", "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp", "SenderId"}

func (s *Server) sqsReceiveMessage(ctx context.Context, body json.RawMessage) (any, error) {
	var in struct {
		QueueURL                    string   `json:"QueueUrl"`
		MaxNumberOfMessages         *int     `json:"MaxNumberOfMessages"`
		WaitTimeSeconds             *int     `json:"WaitTimeSeconds"`
		VisibilityTimeout           *int     `json:"VisibilityTimeout"`
		AttributeNames              []string `json:"AttributeNames"`
		MessageSystemAttributeNames []string `json:"MessageSystemAttributeNames"`
	}
	if err := decodeSQS(body, &in); err != nil {
		return nil, err
	}
	q, err := s.queueByURL(in.QueueURL)
	if err != nil {
		return nil, err
	}
	maxMessages := 1
	if in.MaxNumberOfMessages != nil {
		maxMessages = *in.MaxNumberOfMessages
		if maxMessages < 1 || maxMessages > sqsMaxMessages {
			return nil, &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", maxMessages)}
		}
	}
	wait := q.wait
	if in.WaitTimeSeconds != nil {
		wait = time.Duration(*in.WaitTimeSeconds) * time.Second
		if wait < 0 || wait > sqsMaxWaitTime {
			return nil, &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", *in.WaitTimeSeconds)}
		}
	}
	visibility := q.visibility
	if in.VisibilityTimeout != nil {
		visibility = time.Duration(*in.VisibilityTimeout) * time.Second
		if visibility < 0 || visibility > sqsMaxVisibilityTimeout {
			return nil, &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.", *in.VisibilityTimeout)}
		}
	}
	wanted := map[string]bool{}
	for _, name := range slices.Concat(in.AttributeNames, in.MessageSystemAttributeNames) {
		if name == "All" {
			for _, a := range sqsSystemAttributes {
				wanted[a] = true
			}
			continue
		}
		if !slices.Contains(sqsSystemAttributes, name) {
			return nil, &APIError{Code: "InvalidAttributeName", Message: fmt.Sprintf("Unknown Attribute %s.", name)}
		}
		wanted[name] = true
	}

	deadline := time.Now().Add(wait)
	for {
		now := time.Now()
		if got := s.receive(q, now, maxMessages, visibility, wanted); len(got) > 0 || !now.Before(deadline) {
			return map[string]any{"Messages": got}, nil
		}
		if err := s.awaitMessages(ctx, q, now, deadline); err != nil {
			return nil, err
		}
	}
}

// receive hides up to maxMessages visible messages for visibility and returns them. Callers
// hold s.mu.
func (s *Server) receive(q *sqsQueue, now time.Time, maxMessages int, visibility time.Duration, wanted map[string]bool) []sqsMessageJSON {
	var out []sqsMessageJSON
	for _, m := range q.messages {
		if len(out) == maxMessages {
			break
		}
		if m.visibleAt.After(now) {
			continue
		}
		m.receives++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.visibleAt = now.Add(visibility)
		msg := sqsMessageJSON{MessageID: m.id, ReceiptHandle: receiptHandle(q, m), MD5OfBody: md5Hex(m.body), Body: m.body}
		if len(wanted) > 0 {
			msg.Attributes = map[string]string{}
			all := map[string]string{
				"SentTimestamp":                    strconv.FormatInt(m.sent.UnixMilli(), 10),
				"ApproximateReceiveCount":          strconv.Itoa(m.receives),
				"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
				"SenderId":                         "AIDAJOINERYTEST",
			}
			for name := range wanted {
				msg.Attributes[name] = all[name]
			}
		}
		out = append(out, msg)
	}
	return out
}

// awaitMessages waits, with s.mu released, until a message is sent, an in-flight message of q
// becomes visible again, deadline passes or ctx ends. dispatch runs actions with s.mu held; a
// long poll must not block every other call for up to 20 seconds.
func (s *Server) awaitMessages(ctx context.Context, q *sqsQueue, now, deadline time.Time) error {
	wake := deadline
	for _, m := range q.messages {
		if m.visibleAt.After(now) && m.visibleAt.Before(wake) {
			wake = m.visibleAt
		}
	}
	arrived := s.sqs.arrived
	timer := time.NewTimer(wake.Sub(now))
	defer timer.Stop()
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-arrived:
		return nil
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deleteMessage removes the message a receipt handle names. A well-formed handle of a message
// already deleted, or of an earlier receive, succeeds without deleting anything, as in SQS.
func (s *Server) deleteMessage(q *sqsQueue, handle string) *APIError {
	queue, id, receive, ok := parseReceiptHandle(handle)
	if !ok || queue != q.name {
		return &APIError{Code: "ReceiptHandleIsInvalid", Message: fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", handle)}
	}
	q.messages = slices.DeleteFunc(q.messages, func(m *sqsMessage) bool { return m.id == id && m.receives == receive })
	return nil
}

func (s *Server) sqsDeleteMessage(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		QueueURL      string `json:"QueueUrl"`
		ReceiptHandle string `json:"ReceiptHandle"`
	}
	if err := decodeSQS(body, &in); err != nil {
		return nil, err
	}
	q, err := s.queueByURL(in.QueueURL)
	if err != nil {
		return nil, err
	}
	if in.ReceiptHandle == "" {
		return nil, &APIError{Code: "MissingParameter", Message: "The request must contain the parameter ReceiptHandle."}
	}
	if apiErr := s.deleteMessage(q, in.ReceiptHandle); apiErr != nil {
		return nil, apiErr
	}
	return nil, nil
}

var sqsBatchEntryID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

func (s *Server) sqsDeleteMessageBatch(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		QueueURL string `json:"QueueUrl"`
		Entries  []struct {
			ID            string `json:"Id"`
			ReceiptHandle string `json:"ReceiptHandle"`
		} `json:"Entries"`
	}
	if err := decodeSQS(body, &in); err != nil {
		return nil, err
	}
	q, err := s.queueByURL(in.QueueURL)
	if err != nil {
		return nil, err
	}
	switch {
	case len(in.Entries) == 0:
		return nil, &APIError{Code: "EmptyBatchRequest", Message: "There should be at least one DeleteMessageBatchRequestEntry in the request."}
	case len(in.Entries) > sqsMaxMessages:
		return nil, &APIError{Code: "TooManyEntriesInBatchRequest", Message: fmt.Sprintf("Maximum number of entries per request are 10. You have sent %d.", len(in.Entries))}
	}
	seen := map[string]bool{}
	for _, e := range in.Entries {
		if !sqsBatchEntryID.MatchString(e.ID) {
			return nil, &APIError{Code: "InvalidBatchEntryId", Message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."}
		}
		if seen[e.ID] {
			return nil, &APIError{Code: "BatchEntryIdsNotDistinct", Message: fmt.Sprintf("Id %s repeated.", e.ID)}
		}
		seen[e.ID] = true
	}
	type failed struct {
		ID          string `json:"Id"`
		Code        string `json:"Code"`
		Message     string `json:"Message"`
		SenderFault bool   `json:"SenderFault"`
	}
	type succeeded struct {
		ID string `json:"Id"`
	}
	out := struct {
		Successful []succeeded `json:"Successful"`
		Failed     []failed    `json:"Failed"`
	}{Successful: []succeeded{}, Failed: []failed{}}
	for _, e := range in.Entries {
		if apiErr := s.deleteMessage(q, e.ReceiptHandle); apiErr != nil {
			out.Failed = append(out.Failed, failed{ID: e.ID, Code: apiErr.Code, Message: apiErr.Message, SenderFault: true})
			continue
		}
		out.Successful = append(out.Successful, succeeded{ID: e.ID})
	}
	return out, nil
}

// CreateQueue creates a standard queue (or returns the existing one) and returns its URL.
func (s *Server) CreateQueue(name string) (string, error) {
	out, err := s.callJSON(ServiceSQS, "CreateQueue", map[string]any{"QueueName": name})
	if err != nil {
		return "", err
	}
	return out.(map[string]string)["QueueUrl"], nil
}

// SendEvent sends body to the named queue as EventBridge would deliver an event, and returns the
// message ID.
func (s *Server) SendEvent(queue, body string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.sqs.queues[queue]
	if !ok {
		return "", fmt.Errorf("sending to queue %s: %w", queue, errQueueDoesNotExist())
	}
	return s.enqueue(q, &body, 0)
}

// QueueDepth reports how many messages the named queue holds: visible ones and those received
// but not yet deleted (in flight).
func (s *Server) QueueDepth(queue string) (visible, inFlight int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.sqs.queues[queue]
	if !ok {
		return 0, 0, fmt.Errorf("queue %s: %w", queue, errQueueDoesNotExist())
	}
	visible, inFlight = q.counts(time.Now())
	return visible, inFlight, nil
}

// callJSON runs a registered JSON operation in process, as a test helper's shortcut.
func (s *Server) callJSON(service, operation string, in any) (any, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding %s input: %w", operation, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.json[service+":"+operation](context.Background(), body)
}
