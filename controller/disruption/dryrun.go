package disruption

import (
	"context"
	"fmt"
	"time"
)

// Pass is what one pass of the loop would do, computed without doing it.
type Pass struct {
	// Command is the first method's command; nil when no method found one.
	Command *Command
	// Methods are the methods asked, in order, up to the one that made Command.
	Methods []MethodResult
}

// DryRun runs one pass over cluster at now, as Controller.Step does but without validating,
// executing, publishing events or metrics: the command the loop would start, and why every
// node was passed over.
func DryRun(ctx context.Context, cluster *Cluster, methods []Method, now time.Time) (*Pass, error) {
	pass := &Pass{}
	for _, m := range methods {
		cmd, res, err := computeMethod(ctx, cluster, m, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name(), err)
		}
		pass.Methods = append(pass.Methods, res)
		if cmd != nil {
			pass.Command = cmd
			return pass, nil
		}
	}
	return pass, nil
}
