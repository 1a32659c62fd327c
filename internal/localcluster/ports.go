package localcluster

import (
	"fmt"
	"net"
	"strings"
)

// freePort asks the kernel for a free TCP port on 127.0.0.1. The port is released before the
// component binds it, so another process may take it in between; startComponent retries with
// fresh ports when a component reports the address is in use.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PortInUse reports whether something listens on 127.0.0.1:port.
func PortInUse(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

// isAddressInUse reports whether a component's failure was a lost race for its port.
func isAddressInUse(logTail string) bool {
	return strings.Contains(logTail, "address already in use")
}
