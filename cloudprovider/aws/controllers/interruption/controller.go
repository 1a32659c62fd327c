// Package interruption is the interruption controller of the AWS provider. It long-polls the SQS
// queue named by --interruption-queue, into which EventBridge rules forward EC2 spot interruption
// warnings, capacity reservation interruption warnings, rebalance recommendations, instance
// state changes and AWS Health scheduled changes, and acts on the NodeClaims of the instances
// they name: a spot or capacity reservation interruption marks the offering unavailable and
// deletes the NodeClaim (the termination finalizer taints and drains the node);
// a scheduled change or an instance that is stopping or terminating deletes the NodeClaim; a
// rebalance recommendation only records an event. Before it deletes a NodeClaim, the controller
// pre-plans replacement capacity for the node's pods (Options.Preplanner), so the new node starts
// as soon as the warning arrives rather than once the evicted pods are pending. Every message is deleted once handled, including those about instances this cluster
// does not own and those that cannot be parsed. A StatusPoller beside it acts on EC2's failed
// instance and system status checks the same way, terminating forcefully.
package interruption

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/joinery-dev/joinery/cloudprovider"
	awsinterruption "github.com/joinery-dev/joinery/cloudprovider/aws/interruption"
)

// Name is the controller's name in logs.
const Name = "interruption"

// Defaults, as Karpenter polls: the longest long poll SQS allows, full batches, and a
// visibility timeout that gives a batch time to be handled before its messages reappear.
const (
	DefaultWaitTime          = 20 * time.Second
	DefaultVisibilityTimeout = 20 * time.Second
	DefaultMinBackoff        = time.Second
	DefaultMaxBackoff        = time.Minute
	maxMessages              = 10
)

// SQSAPI is the part of the SQS client the controller uses.
type SQSAPI interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// UnavailableOfferings is the cluster-wide record of offerings not to plan or launch
// (controller/state.UnavailableOfferings implements it).
type UnavailableOfferings interface {
	MarkUnavailable(ctx context.Context, ttl time.Duration, offerings ...cloudprovider.OfferingKey) error
}

// PreplanMethod is the method name the controller pre-plans under, whatever the message's
// kind, so a spot warning followed by a state change of the same instance plans once.
const PreplanMethod = "interruption"

// Options configure a Controller; zero durations take the defaults.
type Options struct {
	// Queue is the name of the interruption queue.
	Queue string
	// WaitTime is how long one ReceiveMessage waits for messages (at most 20s).
	WaitTime time.Duration
	// VisibilityTimeout is how long received messages stay hidden from other receivers; a
	// message whose handling failed reappears after it.
	VisibilityTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed ReceiveMessage, which doubles
	// with each failure in a row.
	MinBackoff, MaxBackoff time.Duration
	// UnavailableTTL is how long a spot-interrupted offering stays unavailable;
	// cloudprovider.UnavailableOfferingsTTL if zero.
	UnavailableTTL time.Duration
	// Preplanner, when not nil, launches capacity for the pods of a NodeClaim before the
	// controller deletes it.
	Preplanner cloudprovider.Preplanner
	Clock      clock.Clock
}

// Controller consumes the interruption queue. It is a manager.Runnable.
type Controller struct {
	kube        client.Client
	sqs         SQSAPI
	unavailable UnavailableOfferings
	recorder    events.EventRecorder
	opts        Options

	queueURL string // resolved lazily; forgotten when SQS says the queue is gone
}

var (
	_ manager.Runnable               = (*Controller)(nil)
	_ manager.LeaderElectionRunnable = (*Controller)(nil)
)

// New returns a Controller reading NodeClaims and Nodes through kube.
func New(kube client.Client, sqsClient SQSAPI, unavailable UnavailableOfferings, recorder events.EventRecorder, opts Options) *Controller {
	if opts.WaitTime == 0 {
		opts.WaitTime = DefaultWaitTime
	}
	if opts.VisibilityTimeout == 0 {
		opts.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.UnavailableTTL == 0 {
		opts.UnavailableTTL = cloudprovider.UnavailableOfferingsTTL
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{kube: kube, sqs: sqsClient, unavailable: unavailable, recorder: recorder, opts: opts}
}

// NeedLeaderElection is true: one replica handles each message.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start polls the queue until ctx ends. Failed polls are retried with backoff; nothing a
// message contains stops the loop.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(Name).WithValues("queue", c.opts.Queue)
	ctx = log.IntoContext(ctx, logger)
	logger.Info("watching the interruption queue")
	failures := 0
	for ctx.Err() == nil {
		if err := c.Poll(ctx); err != nil {
			if ctx.Err() != nil {
				break
			}
			wait := c.backoff(failures)
			failures++
			c.logPollError(logger, err, wait)
			select {
			case <-ctx.Done():
			case <-c.opts.Clock.After(wait):
			}
			continue
		}
		failures = 0
	}
	return nil
}

// backoff is the wait after the failures'th failure in a row.
func (c *Controller) backoff(failures int) time.Duration {
	return min(c.opts.MinBackoff<<min(failures, 16), c.opts.MaxBackoff)
}

func (c *Controller) logPollError(logger logr.Logger, err error, wait time.Duration) {
	switch classify(err) {
	case errorThrottled, errorTransient:
		logger.Info("receiving interruption messages failed, retrying", "error", err.Error(), "retryAfter", wait)
	case errorQueueMissing:
		logger.Error(err, "the interruption queue does not exist; create it or fix --interruption-queue", "retryAfter", wait)
	case errorAccessDenied:
		logger.Error(err, "not allowed to use the interruption queue; grant sqs:GetQueueUrl, sqs:ReceiveMessage and sqs:DeleteMessage", "retryAfter", wait)
	default:
		logger.Error(err, "receiving interruption messages failed", "retryAfter", wait)
	}
}

// Poll receives one batch (waiting up to WaitTime for it) and handles it. Its error is the
// receive's; a message that cannot be handled is left on the queue to be received again.
func (c *Controller) Poll(ctx context.Context) error {
	queueURL, err := c.resolveQueueURL(ctx)
	if err != nil {
		return err
	}
	out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queueURL),
		MaxNumberOfMessages:         maxMessages,
		WaitTimeSeconds:             int32(c.opts.WaitTime / time.Second),
		VisibilityTimeout:           int32(c.opts.VisibilityTimeout / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		if classify(err) == errorQueueMissing {
			c.queueURL = "" // it may be recreated under a new URL
		}
		return fmt.Errorf("receiving from queue %s: %w", c.opts.Queue, err)
	}
	if len(out.Messages) == 0 {
		return nil
	}
	messages := make([]received, 0, len(out.Messages))
	for _, m := range out.Messages {
		messages = append(messages, c.parse(ctx, m))
	}
	c.handleBatch(ctx, queueURL, messages)
	return nil
}

func (c *Controller) resolveQueueURL(ctx context.Context) (string, error) {
	if c.queueURL != "" {
		return c.queueURL, nil
	}
	out, err := c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.opts.Queue)})
	if err != nil {
		return "", fmt.Errorf("getting the URL of queue %s: %w", c.opts.Queue, err)
	}
	c.queueURL = aws.ToString(out.QueueUrl)
	return c.queueURL, nil
}

// received is an SQS message with its parsed event; parsed.Kind is NoOp when parsing failed.
type received struct {
	sqs    sqstypes.Message
	parsed awsinterruption.Message
	sentAt time.Time // zero when SQS did not say
}

func (c *Controller) parse(ctx context.Context, m sqstypes.Message) received {
	r := received{sqs: m}
	if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		r.sentAt = time.UnixMilli(ms)
	}
	parsed, err := awsinterruption.Parse(aws.ToString(m.Body))
	if err != nil {
		log.FromContext(ctx).Error(err, "dropping an interruption message that cannot be parsed", "messageID", aws.ToString(m.MessageId))
		parsed = awsinterruption.Message{Kind: awsinterruption.NoOp}
	}
	r.parsed = parsed
	receivedMessages.WithLabelValues(string(parsed.Kind)).Inc()
	return r
}

// deleteMessage removes a handled message from the queue.
func (c *Controller) deleteMessage(ctx context.Context, queueURL string, r received) error {
	_, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: r.sqs.ReceiptHandle})
	if err != nil {
		return fmt.Errorf("deleting message %s: %w", aws.ToString(r.sqs.MessageId), err)
	}
	deletedMessages.Inc()
	if !r.sentAt.IsZero() {
		messageQueueDuration.Observe(c.opts.Clock.Since(r.sentAt).Seconds())
	}
	return nil
}
