package integration

import (
	"testing"
)

// TestDriftReplacesWhenPodsFitNowhereElse: the drifted node's pods do not fit on the other
// node (the Filters say so), so the loop taints it, launches one replacement and deletes the
// drifted NodeClaim only once the replacement is initialized.
func TestDriftReplacesWhenPodsFitNowhereElse(t *testing.T) {
	w := newWorld(t)
	w.node("old", "4", true)
	w.node("full", "1", false)
	w.pod("busy", "full", "900m")
	w.pod("web-1", "old", "500m")
	w.pod("web-2", "old", "500m")
	startLoop(t)

	await(t, "a replacement", func() bool { return len(w.replacements()) == 1 })
	if !w.tainted("old") {
		t.Error("drifted node not tainted karpenter.sh/disrupted while its replacement launches")
	}
	awaitPasses(t, 3) // the loop looks again, and must not delete the candidate yet
	if !w.exists("old") {
		t.Fatal("drifted NodeClaim deleted before its replacement was initialized")
	}
	if n := len(w.replacements()); n != 1 {
		t.Fatalf("replacements = %d, want 1", n)
	}
	w.initialize(w.replacements()[0])
	await(t, "drifted NodeClaim deleted", func() bool { return !w.exists("old") })
	if n := len(w.replacements()); n != 1 {
		t.Errorf("replacements = %d, want 1", n)
	}
}

// TestDriftDeletesWhenPodsFitElsewhere: the drifted node's pods fit on the other node, so the
// command deletes it without launching anything.
func TestDriftDeletesWhenPodsFitElsewhere(t *testing.T) {
	w := newWorld(t)
	w.node("old", "4", true)
	w.node("roomy", "8", false)
	w.pod("web-1", "old", "500m")
	startLoop(t)
	await(t, "drifted NodeClaim deleted", func() bool { return !w.exists("old") })
	if n := len(w.replacements()); n != 0 {
		t.Errorf("replacements = %d, want 0", n)
	}
}

// TestRestartInTheMiddleOfACommand: the controller stops while a replacement launches; a new
// one resumes the command from the cluster — no second replacement, the taint kept — and
// finishes it once the replacement is initialized.
func TestRestartInTheMiddleOfACommand(t *testing.T) {
	w := newWorld(t)
	w.node("old", "4", true)
	w.node("full", "1", false)
	w.pod("busy", "full", "900m")
	w.pod("web-1", "old", "500m")
	stop := startLoop(t)
	await(t, "a replacement", func() bool { return len(w.replacements()) == 1 })
	stop()

	startLoop(t)
	awaitPasses(t, 3) // the new loop recovers and looks again: no second replacement
	if n := len(w.replacements()); n != 1 {
		t.Fatalf("replacements after restart = %d, want 1", n)
	}
	if !w.exists("old") || !w.tainted("old") {
		t.Fatal("the command was not resumed: candidate gone or untainted while its replacement launches")
	}
	w.initialize(w.replacements()[0])
	await(t, "drifted NodeClaim deleted", func() bool { return !w.exists("old") })
}
