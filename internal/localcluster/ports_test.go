package localcluster

import (
	"net"
	"testing"
)

// TestPortInUse counts listeners only: the local end of another connection is not the
// component that had the port (the e2e suites' stop check failed on that under load).
func TestPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	listening := l.Addr().(*net.TCPAddr).Port
	if !PortInUse(listening) {
		t.Errorf("port %d has a listener, PortInUse says it is free", listening)
	}
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	local := conn.LocalAddr().(*net.TCPAddr).Port
	if PortInUse(local) {
		t.Errorf("port %d is only a connection's local end, PortInUse says something listens", local)
	}
	l.Close()
	if PortInUse(listening) {
		t.Errorf("port %d: its listener is closed, PortInUse says in use", listening)
	}
}
