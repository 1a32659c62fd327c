package framework

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

// forbiddenMarker and serviceAccountMarker are how the API server words a request RBAC
// refused to a ServiceAccount, as client-go logs it (a reflector's failed list or watch, a
// controller's failed call); the user's name is quoted, and escaped inside a logged string.
const (
	forbiddenMarker      = "is forbidden: User "
	serviceAccountMarker = "system:serviceaccount:"
)

// forbiddenRequests returns the lines of joinery's binaries' logs in logsDir that report a
// request the API server refused for lack of a permission, at most a few per binary. The
// binaries run as the chart's ServiceAccounts, and many refusals (an informer that cannot
// list, say) only retry in the background; a suite fails on them so that a role missing a
// permission cannot pass unnoticed.
func forbiddenRequests(logsDir string) ([]string, error) {
	var found []string
	for _, comp := range []localcluster.Component{localcluster.JoineryScheduler, localcluster.JoineryController} {
		path := filepath.Join(logsDir, string(comp)+".log")
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s's log: %w", comp, err)
		}
		scanner := bufio.NewScanner(f)
		scanner.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
		n := 0
		for scanner.Scan() {
			if line := scanner.Text(); strings.Contains(line, forbiddenMarker) && strings.Contains(line, serviceAccountMarker) {
				if n++; n <= 5 {
					found = append(found, fmt.Sprintf("%s: %s", comp, line))
				}
			}
		}
		err = scanner.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s's log: %w", comp, err)
		}
	}
	return found, nil
}
