package planner

import "testing"

// notifier records subscriptions, as the AWS provider's zonal shift watcher takes them.
type notifier struct{ fns []func(string) }

func (n *notifier) OnOfferingsReturn(fn func(string)) { n.fns = append(n.fns, fn) }

// TestOnOfferingsReturnReachesTheProvider: the plugin's subscription reaches a cloud provider
// that announces returning offerings, and the provider's announcement reaches the plugin;
// without such a provider subscribing is a no-op.
func TestOnOfferingsReturnReachesTheProvider(t *testing.T) {
	n := &notifier{}
	var heard []string
	(&refreshingPlanner{notifier: n}).OnOfferingsReturn(func(why string) { heard = append(heard, why) })
	if len(n.fns) != 1 {
		t.Fatalf("%d subscriptions reached the provider, want 1", len(n.fns))
	}
	n.fns[0]("zonal shift away from usw2-az1 ended")
	if len(heard) != 1 {
		t.Errorf("heard %q, want the announcement", heard)
	}
	(&refreshingPlanner{}).OnOfferingsReturn(func(string) { t.Error("called without a notifier") })
}
