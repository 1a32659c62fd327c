package v1

import (
	"encoding/json"
	"fmt"
	"time"
)

// Never is the spelling of "no duration" in expireAfter and consolidateAfter.
const Never = "Never"

// NillableDuration is a duration that may also be Never. Its zero value is Never: the field it
// sits in is defaulted by the API server, so a zero value read back from the server was set as
// Never on purpose.
//
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
type NillableDuration struct {
	// Duration is nil when the value is Never.
	Duration *time.Duration `json:"-"`
}

// DurationOf returns a NillableDuration that holds d.
func DurationOf(d time.Duration) NillableDuration {
	return NillableDuration{Duration: &d}
}

// NeverDuration returns a NillableDuration that holds Never.
func NeverDuration() NillableDuration {
	return NillableDuration{}
}

// IsNever reports whether the duration is Never.
func (d NillableDuration) IsNever() bool {
	return d.Duration == nil
}

// String returns the duration in Go's notation, or Never.
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// MarshalJSON writes the duration as a JSON string.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a Go duration string or Never. JSON null is Never too.
func (d *NillableDuration) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		d.Duration = nil
		return nil
	}
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("duration must be a string: %w", err)
	}
	if text == Never {
		d.Duration = nil
		return nil
	}
	parsed, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("parsing duration %q: %w", text, err)
	}
	d.Duration = &parsed
	return nil
}
