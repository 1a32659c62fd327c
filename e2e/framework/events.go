package framework

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EventNotes returns the notes of the events, in every namespace, with reason about the object
// named name.
func (e *Env) EventNotes(ctx context.Context, reason, name string) ([]string, error) {
	list, err := e.Client.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	var notes []string
	for _, ev := range list.Items {
		if ev.Reason == reason && ev.Regarding.Name == name {
			notes = append(notes, ev.Note)
		}
	}
	return notes, nil
}
