//go:build unix

package testutil

import (
	"net"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// RefusedAddr returns a loopback address ("127.0.0.1:port") that refuses
// TCP connections, for tests of a server that cannot be reached. The port is
// held by a socket bound to it that never listens, until the test ends: a
// port listened on and closed at once can be taken by any other server (a
// parallel test's) before the test dials it.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	unix.CloseOnExec(fd)
	t.Cleanup(func() { _ = unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind 127.0.0.1:0: %v", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatalf("getsockname: %v", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
}
