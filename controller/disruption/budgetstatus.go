package disruption

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joinery-dev/joinery/controller/disruption/budget"
)

// ConditionTypeDisruptionBudgetsValid is joinery's own NodePool condition: False, with reason
// InvalidBudget and a message naming each budget, while a budget cannot work as written (its
// schedule does not parse, has no duration or never fires; its nodes do not parse). A budget
// that cannot be evaluated allows no disruption for its reasons; one that never fires never
// applies. It is written only once a budget has been found invalid, and does not affect
// Ready: provisioning goes on.
const ConditionTypeDisruptionBudgetsValid = "DisruptionBudgetsValid"

// reportBudgets keeps each NodePool's DisruptionBudgetsValid condition, with one Warning
// InvalidDisruptionBudget event each time the problems change. The patch is optimistic, so a
// pass working from a stale cache neither writes twice nor publishes twice.
func (c *Controller) reportBudgets(ctx context.Context, cluster *Cluster, now time.Time) {
	for _, name := range sortedKeys(cluster.NodePools) {
		np := cluster.NodePools[name]
		var msgs []string
		for _, p := range budget.Validate(np, now) {
			msgs = append(msgs, p.Message)
		}
		cur := meta.FindStatusCondition(np.Status.Conditions, ConditionTypeDisruptionBudgetsValid)
		want := metav1.Condition{Type: ConditionTypeDisruptionBudgetsValid, Status: metav1.ConditionTrue, Reason: "Valid",
			ObservedGeneration: np.Generation, LastTransitionTime: metav1.NewTime(now)}
		if len(msgs) > 0 {
			want.Status, want.Reason, want.Message = metav1.ConditionFalse, "InvalidBudget", strings.Join(msgs, "; ")
		}
		switch {
		case cur == nil && len(msgs) == 0:
			continue // never invalid: nothing to say
		case cur != nil && cur.Status == want.Status && cur.Message == want.Message && cur.ObservedGeneration == want.ObservedGeneration:
			continue
		}
		updated := np.DeepCopy()
		meta.SetStatusCondition(&updated.Status.Conditions, want)
		if err := c.client.Status().Patch(ctx, updated, client.MergeFromWithOptions(np, client.MergeFromWithOptimisticLock{})); err != nil {
			// A conflict means the cache is behind: the next pass looks again.
			log.FromContext(ctx).V(1).Info("writing the disruption budgets condition", "nodepool", name, "error", err.Error())
			continue
		}
		if len(msgs) > 0 && (cur == nil || cur.Message != want.Message) {
			c.pub.recorder.Eventf(updated, nil, corev1.EventTypeWarning, EventInvalidDisruptionBudget, "Disrupt",
				"Invalid disruption budgets: %s", want.Message)
		}
	}
}
