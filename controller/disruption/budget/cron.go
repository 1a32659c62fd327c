package budget

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed five-field cron expression (minute, hour, day of month, month, day of
// week), always evaluated in UTC, as budgets' schedules are.
type Schedule struct {
	minute, hour, dom, month, dow uint64 // bit i set: value i allowed
	// domStar, dowStar: the field was * or ?; cron's rule is that when both day fields are
	// restricted a day matches either, otherwise the restricted one decides.
	domStar, dowStar bool
}

var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

var monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
var dayNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

type field struct {
	name     string
	min, max int
	names    map[string]int
}

var fields = [5]field{
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day of month", 1, 31, nil},
	{"month", 1, 12, monthNames},
	{"day of week", 0, 7, dayNames}, // 7 is Sunday too
}

// ParseSchedule parses a cron expression or one of the macros @yearly, @annually, @monthly,
// @weekly, @daily, @midnight and @hourly.
func ParseSchedule(expr string) (*Schedule, error) {
	spec := strings.TrimSpace(expr)
	if m, ok := macros[strings.ToLower(spec)]; ok {
		spec = m
	} else if strings.HasPrefix(spec, "@") {
		return nil, fmt.Errorf("schedule %q: unknown macro", expr)
	}
	parts := strings.Fields(spec)
	if len(parts) != 5 {
		return nil, fmt.Errorf("schedule %q: want 5 fields (minute hour day-of-month month day-of-week), got %d", expr, len(parts))
	}
	var masks [5]uint64
	var stars [5]bool
	for i, p := range parts {
		mask, star, err := parseField(p, fields[i])
		if err != nil {
			return nil, fmt.Errorf("schedule %q: %w", expr, err)
		}
		masks[i], stars[i] = mask, star
	}
	// Sunday may be written 0 or 7.
	if masks[4]&(1<<7) != 0 {
		masks[4] = masks[4]&^(1<<7) | 1
	}
	return &Schedule{minute: masks[0], hour: masks[1], dom: masks[2], month: masks[3], dow: masks[4], domStar: stars[2], dowStar: stars[4]}, nil
}

func parseField(text string, f field) (uint64, bool, error) {
	var mask uint64
	star := false
	for _, item := range strings.Split(text, ",") {
		rangePart, stepPart, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepPart)
			if err != nil || n <= 0 {
				return 0, false, fmt.Errorf("%s: step %q is not a positive number", f.name, stepPart)
			}
			step = n
		}
		lo, hi := f.min, f.max
		switch {
		case rangePart == "*" || rangePart == "?":
			if !hasStep {
				star = true
			}
			if f.name == "day of week" {
				hi = 6 // * means every day once
			}
		default:
			a, b, isRange := strings.Cut(rangePart, "-")
			var err error
			if lo, err = value(a, f); err != nil {
				return 0, false, err
			}
			hi = lo
			if isRange {
				if hi, err = value(b, f); err != nil {
					return 0, false, err
				}
			} else if hasStep {
				hi = f.max // "5/15": from 5 to the end
			}
			if hi < lo {
				return 0, false, fmt.Errorf("%s: range %q ends before it starts", f.name, rangePart)
			}
		}
		for v := lo; v <= hi; v += step {
			mask |= 1 << uint(v)
		}
	}
	return mask, star, nil
}

func value(text string, f field) (int, error) {
	if v, ok := f.names[strings.ToLower(text)]; ok {
		return v, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", f.name, text)
	}
	if n < f.min || n > f.max {
		return 0, fmt.Errorf("%s: %d is outside %d-%d", f.name, n, f.min, f.max)
	}
	return n, nil
}

func has(mask uint64, v int) bool { return mask&(1<<uint(v)) != 0 }

func (s *Schedule) dayMatches(t time.Time) bool {
	dom, dow := has(s.dom, t.Day()), has(s.dow, int(t.Weekday()))
	switch {
	case s.domStar && s.dowStar:
		return true
	case s.domStar:
		return dow
	case s.dowStar:
		return dom
	default:
		return dom || dow
	}
}

// searchYears bounds Next: an expression such as "0 0 30 2 *" never fires.
const searchYears = 5

// Next returns the first time strictly after t, in UTC and to the minute, at which the
// schedule fires, or the zero time if it never fires within five years.
func (s *Schedule) Next(t time.Time) time.Time {
	t = t.UTC().Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(searchYears, 0, 0)
	for t.Before(limit) {
		if !has(s.month, int(t.Month())) {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if !s.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if !has(s.hour, t.Hour()) {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, time.UTC)
			continue
		}
		if !has(s.minute, t.Minute()) {
			// jump to the next allowed minute of this hour, or the next hour
			rest := s.minute >> uint(t.Minute()+1)
			if rest == 0 {
				t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, time.UTC)
			} else {
				t = t.Add(time.Duration(bits.TrailingZeros64(rest)+1) * time.Minute)
			}
			continue
		}
		return t
	}
	return time.Time{}
}
