package budget

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func nodePool(budgets ...karpv1.Budget) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Disruption.Budgets = budgets
	return np
}

func scheduled(nodes, schedule string, d time.Duration, reasons ...karpv1.DisruptionReason) karpv1.Budget {
	return karpv1.Budget{Nodes: nodes, Schedule: ptr.To(schedule), Duration: &metav1.Duration{Duration: d}, Reasons: reasons}
}

func TestAllowed(t *testing.T) {
	noon := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) // a Tuesday
	tests := []struct {
		name    string
		np      *karpv1.NodePool
		reason  string
		counts  Counts
		now     time.Time
		want    int
		wantErr string
	}{
		{name: "default 10% of 10", np: nodePool(), reason: karpv1.DisruptionReasonDrifted, counts: Counts{Total: 10}, want: 1},
		{name: "default 10% of 11 rounds up", np: nodePool(), reason: karpv1.DisruptionReasonEmpty, counts: Counts{Total: 11}, want: 2},
		{name: "default 10% of 0", np: nodePool(), reason: karpv1.DisruptionReasonEmpty, counts: Counts{Total: 0}, want: 0},
		{name: "seeds' example: 20% of 19 is 4", np: nodePool(karpv1.Budget{Nodes: "20%", Reasons: []karpv1.DisruptionReason{"Empty", "Drifted"}}), reason: "Drifted", counts: Counts{Total: 19}, want: 4},
		{name: "percentage less deleting and not ready", np: nodePool(karpv1.Budget{Nodes: "50%"}), reason: "Empty", counts: Counts{Total: 10, Deleting: 2, NotReady: 1}, want: 2},
		{name: "count less deleting and not ready", np: nodePool(karpv1.Budget{Nodes: "3"}), reason: "Empty", counts: Counts{Total: 10, Deleting: 1, NotReady: 1}, want: 1},
		{name: "never below zero", np: nodePool(karpv1.Budget{Nodes: "1"}), reason: "Empty", counts: Counts{Total: 10, Deleting: 3}, want: 0},
		{name: "minimum over active budgets", np: nodePool(karpv1.Budget{Nodes: "20%"}, karpv1.Budget{Nodes: "5"}), reason: "Drifted", counts: Counts{Total: 100}, want: 5},
		{name: "budget for another reason does not apply", np: nodePool(karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{"Underutilized"}}, karpv1.Budget{Nodes: "3"}), reason: "Empty", counts: Counts{Total: 10}, want: 3},
		{name: "budget without reasons applies to all", np: nodePool(karpv1.Budget{Nodes: "0"}), reason: "Empty", counts: Counts{Total: 10}, want: 0},
		{name: "no budget for the reason: unlimited", np: nodePool(karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{"Drifted"}}), reason: "Empty", counts: Counts{Total: 7, Deleting: 2}, want: 5},
		{name: "100%", np: nodePool(karpv1.Budget{Nodes: "100%"}), reason: "Drifted", counts: Counts{Total: 7}, want: 7},
		{name: "0%", np: nodePool(karpv1.Budget{Nodes: "0%"}), reason: "Drifted", counts: Counts{Total: 7}, want: 0},
		{name: "@daily 10m blocks inside the window", np: nodePool(scheduled("0", "@daily", 10*time.Minute, "Underutilized"), karpv1.Budget{Nodes: "5"}), reason: "Underutilized", counts: Counts{Total: 20}, now: time.Date(2026, 12, 1, 0, 9, 59, 0, time.UTC), want: 0},
		{name: "@daily 10m active from its first instant", np: nodePool(scheduled("0", "@daily", 10*time.Minute)), reason: "Drifted", counts: Counts{Total: 20}, now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), want: 0},
		{name: "@daily 10m: window over at 00:10", np: nodePool(scheduled("0", "@daily", 10*time.Minute, "Underutilized"), karpv1.Budget{Nodes: "5"}), reason: "Underutilized", counts: Counts{Total: 20}, now: time.Date(2026, 12, 1, 0, 10, 0, 0, time.UTC), want: 5},
		{name: "@daily 10m does not apply to Empty", np: nodePool(scheduled("0", "@daily", 10*time.Minute, "Underutilized"), karpv1.Budget{Nodes: "5"}), reason: "Empty", counts: Counts{Total: 20}, now: time.Date(2026, 12, 1, 0, 5, 0, 0, time.UTC), want: 5},
		{name: "business hours Mon-Fri 9-17 active on Tuesday noon", np: nodePool(scheduled("0", "0 9 * * mon-fri", 8*time.Hour)), reason: "Drifted", counts: Counts{Total: 20}, now: noon, want: 0},
		// outside its window a scheduled budget limits nothing; no other budget: unlimited
		{name: "business hours not active on Sunday", np: nodePool(scheduled("0", "0 9 * * mon-fri", 8*time.Hour)), reason: "Drifted", counts: Counts{Total: 20}, now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), want: 20},
		{name: "window spanning midnight", np: nodePool(scheduled("0", "0 22 * * *", 4*time.Hour)), reason: "Drifted", counts: Counts{Total: 20}, now: time.Date(2026, 12, 2, 1, 30, 0, 0, time.UTC), want: 0},
		{name: "bad schedule allows nothing and says why", np: nodePool(scheduled("5", "61 * * * *", time.Hour)), reason: "Drifted", counts: Counts{Total: 20}, want: 0, wantErr: "minute: 61 is outside 0-59"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = noon
			}
			got, err := Allowed(tt.np, tt.reason, tt.counts, now)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Allowed = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestScheduleNext(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		expr, from, want string
	}{
		{"@hourly", "2026-12-01 12:00", "2026-12-01 13:00"},
		{"@daily", "2026-12-01 12:00", "2026-12-02 00:00"},
		{"@midnight", "2026-12-31 23:59", "2027-01-01 00:00"},
		{"@weekly", "2026-12-01 12:00", "2026-12-06 00:00"}, // Sunday
		{"@monthly", "2026-12-15 00:00", "2027-01-01 00:00"},
		{"@yearly", "2026-06-01 00:00", "2027-01-01 00:00"},
		{"@annually", "2026-06-01 00:00", "2027-01-01 00:00"},
		{"*/15 * * * *", "2026-12-01 12:07", "2026-12-01 12:15"},
		{"5/20 * * * *", "2026-12-01 12:26", "2026-12-01 12:45"},
		{"0 9-17/4 * * *", "2026-12-01 10:00", "2026-12-01 13:00"},
		{"30 2 * * sun", "2026-12-01 00:00", "2026-12-06 02:30"},
		{"30 2 * * 7", "2026-12-01 00:00", "2026-12-06 02:30"},
		{"0 0 * jan,jul *", "2026-12-01 00:00", "2027-01-01 00:00"},
		{"0 0 1,15 * *", "2026-12-02 00:00", "2026-12-15 00:00"},
		// both day fields restricted: either matches (the 13th, or any Friday)
		{"0 0 13 * fri", "2026-12-01 00:00", "2026-12-04 00:00"},
		{"0 0 29 2 *", "2026-03-01 00:00", "2028-02-29 00:00"},
		{"? ? ? ? ?", "2026-12-01 00:00", "2026-12-01 00:01"},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" after "+tt.from, func(t *testing.T) {
			s, err := ParseSchedule(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Next(at(tt.from)); !got.Equal(at(tt.want)) {
				t.Errorf("Next = %s, want %s", got.Format("2006-01-02 15:04 Mon"), tt.want)
			}
		})
	}
}

func TestParseScheduleErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"@fortnightly": "unknown macro",
		"* * * *":      "want 5 fields",
		"60 * * * *":   "minute: 60 is outside 0-59",
		"* 24 * * *":   "hour: 24 is outside 0-23",
		"* * 0 * *":    "day of month: 0 is outside 1-31",
		"* * * 13 *":   "month: 13 is outside 1-12",
		"* * * * 8":    "day of week: 8 is outside 0-7",
		"*/0 * * * *":  "step \"0\" is not a positive number",
		"5-1 * * * *":  "ends before it starts",
		"* * * foo *":  "month: \"foo\" is not a number",
		"0 0 30 2 * *": "want 5 fields",
	} {
		_, err := ParseSchedule(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSchedule(%q) error = %v, want %q", expr, err, want)
		}
	}
	// never fires: Next is zero, and a budget on it is never active
	s, err := ParseSchedule("0 0 30 2 *")
	if err != nil {
		t.Fatal(err)
	}
	if next := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); !next.IsZero() {
		t.Errorf("Next = %s, want zero", next)
	}
	if active, err := Active(scheduled("0", "0 0 30 2 *", time.Hour), time.Now()); err != nil || active {
		t.Errorf("Active = %t, %v; want false", active, err)
	}
}
