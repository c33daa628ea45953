package redistest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
)

// clusterBusOffset is how far above its client port a cluster node listens
// for the cluster bus; Redis fixes it at 10000.
const clusterBusOffset = 10000

// maxClusterPort keeps port+clusterBusOffset a valid port number.
const maxClusterPort = 50000

var (
	portsMu sync.Mutex
	// portsGiven remembers every port handed out by this process, so two
	// parallel tests of one binary never get the same one. Other processes
	// can still take a port between the check and the server's bind; launch
	// retries on a new port when that happens.
	portsGiven = map[int]bool{}
)

// FreeAddr is a loopback address (127.0.0.1:port) whose port nothing
// listens on now and that this process has handed out to no server or
// other caller, for a process a test starts (a manager's metrics
// endpoint, say).
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// freePort returns a loopback port that nothing listens on. With bus set it
// also needs port+10000 free and the port below maxClusterPort.
func freePort(bus bool) (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		port, err := probePort(0)
		if err != nil {
			return 0, err
		}
		if portsGiven[port] {
			continue
		}
		if bus {
			if port >= maxClusterPort || portsGiven[port+clusterBusOffset] {
				continue
			}
			if _, err := probePort(port + clusterBusOffset); err != nil {
				continue
			}
			portsGiven[port+clusterBusOffset] = true
		}
		portsGiven[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("redistest: no free loopback port found")
}

// probePort binds 127.0.0.1:port (0 = any) and releases it, returning the
// port that was bound.
func probePort(port int) (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
