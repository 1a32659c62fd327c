package disruption

import (
	"context"
	"time"
)

// Pass is what one pass of the loop would do, computed without doing it.
type Pass struct {
	// Command is the pass's first command (the first method's); nil when no method found one.
	Command *Command
	// Commands are every command the pass chooses, Command first (chooseCommands): the
	// independent commands it would validate and run together.
	Commands []*Command
	// Methods are the methods asked for the first command, in order, up to the one that made
	// it.
	Methods []MethodResult
}

// DryRun runs one pass over cluster at now, as Controller.Step chooses its commands but
// without validating, executing, publishing events or metrics: the commands the loop would
// start, and why every node was passed over.
func DryRun(ctx context.Context, cluster *Cluster, methods []Method, now time.Time) (*Pass, error) {
	pass := &Pass{}
	err := chooseCommands(ctx, cluster, methods, now, func(m Method, res MethodResult, _ time.Duration) {
		if len(pass.Commands) == 0 {
			pass.Methods = append(pass.Methods, res)
		}
	}, func(m Method, cmd *Command) bool {
		if pass.Command == nil {
			pass.Command = cmd
		}
		pass.Commands = append(pass.Commands, cmd)
		return true
	})
	if err != nil {
		return nil, err
	}
	return pass, nil
}
