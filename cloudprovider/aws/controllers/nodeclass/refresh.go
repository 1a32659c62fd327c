package nodeclass

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// Each part is resolved again on its own interval (AMI_REFRESH_INTERVAL for AMIs,
// SUBNET_REFRESH_INTERVAL for subnets and security groups), so a short AMI interval does not
// multiply the other Describe calls. A part is due when:
//   - it has not resolved yet, or its last resolution failed (it is retried at once);
//   - its interval has passed since it last resolved;
//   - the class changed: a new generation, or an annotation other than the controller's own
//     (`kubectl annotate` resolves a class again now).
//
// The schedule lives in memory: a restarted controller resolves every class at once.

// interval is how often a part that resolved is resolved again.
func (c *Controller) interval(p part) time.Duration {
	switch p {
	case partAMIs:
		return c.opts.AMIRefreshInterval
	case partSubnets, partSecurityGroups:
		return c.opts.SubnetRefreshInterval
	}
	return c.opts.ResyncInterval
}

// schedule is one class's resolution times.
type schedule struct {
	uid types.UID
	// trigger is the generation and the annotations the resolutions saw.
	trigger string
	// at is when each part last resolved without error.
	at map[part]time.Time
	// dryRunPassed is the key (dryRunKey) of the inputs whose launch dry-runs passed.
	dryRunPassed string
}

// due reports whether p is to be resolved now.
func (s *schedule) due(p part, interval time.Duration, now time.Time) bool {
	at, ok := s.at[p]
	return !ok || !now.Before(at.Add(interval))
}

// resolvedAt records p's resolution at now: a failure makes it due again.
func (s *schedule) resolvedAt(p part, ok bool, now time.Time) {
	if ok {
		s.at[p] = now
	} else {
		delete(s.at, p)
	}
}

// nextRefresh is how long until the first resolved part is due again; false when no part
// has resolved.
func (s *schedule) nextRefresh(interval func(part) time.Duration, now time.Time) (time.Duration, bool) {
	var next time.Duration
	found := false
	for p, at := range s.at {
		if wait := at.Add(interval(p)).Sub(now); !found || wait < next {
			next, found = wait, true
		}
	}
	return max(next, time.Second), found
}

// schedules are every class's schedule, by name.
type schedules struct {
	mu      sync.Mutex
	byClass map[string]schedule
}

func newSchedules() *schedules { return &schedules{byClass: map[string]schedule{}} }

// next is a copy of nc's schedule to update during a reconcile; commit stores it. A class that
// is new, was recreated or changed starts afresh, with every part due.
func (s *schedules) next(nc *awsv1.EC2NodeClass) *schedule {
	s.mu.Lock()
	defer s.mu.Unlock()
	trigger := triggerOf(nc)
	old, ok := s.byClass[nc.Name]
	if !ok || old.uid != nc.UID || old.trigger != trigger {
		return &schedule{uid: nc.UID, trigger: trigger, at: map[part]time.Time{}}
	}
	out := old
	out.at = maps.Clone(old.at)
	return &out
}

func (s *schedules) commit(name string, sched *schedule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byClass[name] = *sched
}

func (s *schedules) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byClass, name)
}

// triggerOf is what makes a class resolve afresh: its generation and its annotations but the
// hash ones the controller writes itself.
func triggerOf(nc *awsv1.EC2NodeClass) string {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(nc.Generation, 10))
	for _, k := range slices.Sorted(maps.Keys(nc.Annotations)) {
		if k == awsv1.AnnotationEC2NodeClassHash || k == awsv1.AnnotationEC2NodeClassHashVersion {
			continue
		}
		b.WriteString("\x00" + k + "=" + nc.Annotations[k])
	}
	return b.String()
}
