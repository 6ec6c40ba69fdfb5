package testenv

import "net"

// FreePort is a loopback port free at the moment of the call. Another
// process may take it before the caller's process binds it: a caller that
// starts a server on it checks that the server came up (the e2e harness
// waits for the operator's /readyz and picks again).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
