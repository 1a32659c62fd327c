package localcluster

import (
	"fmt"
	"net"
	"os"
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

// PortInUse reports whether something listens on port (on 127.0.0.1 or any address). It reads
// the kernel's socket tables rather than trying to bind the port: a bind also fails while
// another process's outgoing connection happens to use the port as its local end, which on a
// machine running several clusters at once says nothing about the component that had it.
// Where /proc cannot be read, it falls back to the bind.
func PortInUse(port int) bool {
	found, ok := listeningIn([]string{"/proc/net/tcp", "/proc/net/tcp6"}, port)
	if ok {
		return found
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

// tcpListen is the state column's value for a listening socket in /proc/net/tcp.
const tcpListen = "0A"

// listeningIn reports whether one of the socket tables lists a listening socket on port; ok is
// false when none of them could be read.
func listeningIn(tables []string, port int) (found, ok bool) {
	want := fmt.Sprintf(":%04X", port)
	for _, table := range tables {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		ok = true
		for _, line := range strings.Split(string(data), "\n")[1:] {
			// sl local_address rem_address st ...; local_address is HEXIP:HEXPORT.
			fields := strings.Fields(line)
			if len(fields) > 3 && fields[3] == tcpListen && strings.HasSuffix(fields[1], want) {
				return true, true
			}
		}
	}
	return false, ok
}

// isAddressInUse reports whether a component's failure was a lost race for its port.
func isAddressInUse(logTail string) bool {
	return strings.Contains(logTail, "address already in use")
}
