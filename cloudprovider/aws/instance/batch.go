package instance

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// Batching defaults: a burst of NodeClaims launched by one scheduling decision arrives within
// milliseconds, so a short idle window collects it without delaying a lone launch noticeably.
const (
	DefaultBatchIdleDuration = 35 * time.Millisecond
	DefaultBatchMaxDuration  = time.Second
	DefaultBatchMaxSize      = 1000
	DefaultBatchCallTimeout  = 2 * time.Minute
)

// BatchOptions configure how concurrent launches are combined into one CreateFleet; zero
// values take the defaults.
type BatchOptions struct {
	// IdleDuration sends a batch once no launch has joined it for this long.
	IdleDuration time.Duration
	// MaxDuration sends a batch at the latest this long after its first launch.
	MaxDuration time.Duration
	// MaxSize sends a batch as soon as it holds this many launches; 1 turns batching off.
	MaxSize int
	// CallTimeout bounds a batch's EC2 calls. They run on a context of their own, so that one
	// launch giving up does not cancel the others'.
	CallTimeout time.Duration
}

func (o BatchOptions) withDefaults() BatchOptions {
	if o.IdleDuration <= 0 {
		o.IdleDuration = DefaultBatchIdleDuration
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = DefaultBatchMaxDuration
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultBatchMaxSize
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultBatchCallTimeout
	}
	return o
}

// nodeClaimTagKeys are the tags that differ between the instances of one NodeClaim shape. A
// batched fleet cannot set them per instance; they are added with CreateTags after it answers.
var nodeClaimTagKeys = []string{"Name", awsv1.TagNodeClaim}

// sharedTags are tags without the NodeClaim's own.
func sharedTags(tags map[string]string) map[string]string {
	out := maps.Clone(tags)
	for _, k := range nodeClaimTagKeys {
		delete(out, k)
	}
	return out
}

// ownTags are the NodeClaim's own tags among tags.
func ownTags(tags map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range nodeClaimTagKeys {
		if v, ok := tags[k]; ok {
			out[k] = v
		}
	}
	return out
}

// batchKey identifies the launches one fleet may serve: everything in the CreateFleet input
// but the token and the NodeClaim's own tags.
func batchKey(req LaunchRequest) string {
	var b strings.Builder
	b.WriteString(strconv.Quote(req.CapacityType))
	b.WriteString(strconv.FormatBool(req.CapacityBlock))
	b.WriteString(strconv.FormatBool(req.Prioritized))
	for _, t := range req.Templates {
		b.WriteString("|" + strconv.Quote(t.TemplateName))
		for _, ov := range t.Overrides {
			b.WriteString(" " + strconv.Quote(ov.InstanceType) + strconv.Quote(ov.Zone) + strconv.Quote(ov.SubnetID) + strconv.FormatFloat(ov.Price, 'g', -1, 64))
		}
	}
	tags := sharedTags(req.Tags)
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		b.WriteString("|" + strconv.Quote(k) + "=" + strconv.Quote(tags[k]))
	}
	return b.String()
}

// member is one Launch waiting for its batch. done is closed once result and err are set.
type member struct {
	req    LaunchRequest
	batch  *batch
	done   chan struct{}
	result Launched
	err    error
}

func (m *member) finish(result Launched, err error) {
	m.result, m.err = result, err
	close(m.done)
}

// batch is the launches of one key collected so far.
type batch struct {
	key       string
	members   []*member
	idle, max *time.Timer
	sent      bool
	opened    time.Time // when its first launch joined, for the batch_time metric
}

// batcher collects launches per key and hands each batch to send when it is idle, old or full.
type batcher struct {
	opts BatchOptions
	send func(members []*member)

	mu   sync.Mutex
	open map[string]*batch
}

func newBatcher(opts BatchOptions, send func([]*member)) *batcher {
	return &batcher{opts: opts, send: send, open: map[string]*batch{}}
}

// add puts m in the open batch of its key, opening one if needed.
func (b *batcher) add(m *member) {
	key := batchKey(m.req)
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := b.open[key]
	if bt == nil {
		bt = &batch{key: key, opened: time.Now()}
		b.open[key] = bt
		bt.idle = time.AfterFunc(b.opts.IdleDuration, func() { b.flush(bt) })
		bt.max = time.AfterFunc(b.opts.MaxDuration, func() { b.flush(bt) })
	} else {
		bt.idle.Reset(b.opts.IdleDuration)
	}
	m.batch = bt
	bt.members = append(bt.members, m)
	if len(bt.members) >= b.opts.MaxSize {
		members := b.closeLocked(bt)
		observeBatch(bt, members)
		go b.send(members)
	}
}

// flush sends bt unless it was sent already.
func (b *batcher) flush(bt *batch) {
	b.mu.Lock()
	if bt.sent {
		b.mu.Unlock()
		return
	}
	members := b.closeLocked(bt)
	b.mu.Unlock()
	if len(members) > 0 {
		observeBatch(bt, members)
		b.send(members)
	}
}

// closeLocked marks bt sent and returns its members; later launches of its key open a new
// batch. Callers hold b.mu.
func (b *batcher) closeLocked(bt *batch) []*member {
	bt.sent = true
	bt.idle.Stop()
	bt.max.Stop()
	if b.open[bt.key] == bt {
		delete(b.open, bt.key)
	}
	return bt.members
}

// observeBatch records a batch that is being sent with members (a batch emptied by withdrawals
// sends nothing and is not recorded).
func observeBatch(bt *batch, members []*member) {
	batchSize.WithLabelValues(batcherCreateFleet).Observe(float64(len(members)))
	batchTime.WithLabelValues(batcherCreateFleet).Observe(time.Since(bt.opened).Seconds())
}

// withdraw takes m out of its batch if the batch has not been sent, and reports whether it did.
// A launch whose caller gave up before its batch left launches nothing.
func (b *batcher) withdraw(m *member) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := m.batch
	if bt == nil || bt.sent {
		return false
	}
	bt.members = slices.DeleteFunc(bt.members, func(other *member) bool { return other == m })
	if len(bt.members) == 0 {
		b.closeLocked(bt)
	}
	return true
}

// pending is how many launches wait in open batches.
func (b *batcher) pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, bt := range b.open {
		n += len(bt.members)
	}
	return n
}
