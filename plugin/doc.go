// Package plugin is joinery's Provisioner, a kube-scheduler plugin (JoineryProvisioner).
//
// When a pod fails every Filter, PostFilter adds it to a pending set and returns Unschedulable
// with what joinery is doing ("provisioning: batching 3 pod(s)", "waiting for NodeClaim
// default-x7k2p", "no NodePool fits: ..."). kube-scheduler appends that to the pod's
// PodScheduled condition. The plugin must come before DefaultPreemption at PostFilter, which
// may end the chain with UnschedulableAndUnresolvable; see manifests/deploy for the profile.
//
// A batcher (ProvisionerArgs.BatchIdleDuration/BatchMaxDuration) hands the pending pods to a
// simulation.Planner, and the plan is published: new NodeClaims are created (GenerateName
// "<nodepool>-", owned by their NodePool), pods planned onto launching NodeClaims are recorded,
// pods get Nominated or FailedScheduling events.
//
// No duplicate capacity: every pod a NodeClaim is made for, or planned onto while it launches,
// is listed in the NodeClaim's simulation.PlannedPodsAnnotationKey annotation. The plugin
// watches NodeClaims and treats a listed pod as waiting — not to be planned again — while the
// NodeClaim launches (not deleted, not Initialized). The cluster is thus the plan's only
// record, so a restarted scheduler (or another profile) rebuilds it from the NodeClaims. A
// NodeClaim that is deleted or initialized releases its pods and they are retried at once.
//
// Which pods: by default those of the profile's own schedulerName (one plugin per profile).
// ProvisionerArgs.SchedulerNames can add names another scheduler serves; those pods never
// reach this scheduler's PostFilter, so they are picked up from their PodScheduled=False,
// Unschedulable condition. Pods of the profile itself are also picked up that way when the
// cluster has no node at all, since kube-scheduler skips PostFilter then.
//
// PreFilter and Filter hold a pod that waits for a NodeClaim to that NodeClaim's node, so it
// does not take a node planned for another pod. Reserve takes a pod that found existing
// capacity out of the plan; Unreserve, after a failed bind, puts it back.
//
// The solver is not imported here: the binary passes a PlannerFactory to New
// (plugin/planner builds joinery's solver). A plugin built without one logs that provisioning
// is disabled and only reports pods as pending.
package plugin
