package testenv

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/datapilot/datapilot/internal/platform"
)

// Operator is a Datapilot operator a test runs as a child process.
type Operator struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// OperatorStart says how to start one.
type OperatorStart struct {
	// Bin is the datapilot binary.
	Bin string
	// Log is the file its output is appended to.
	Log string
	// Env is added to the test's environment.
	Env []string
	// Args returns the flags after `operator`, except
	// --health-probe-bind-address, which the start sets. It is called at
	// each attempt, so that it can pick again a port another process took
	// between its pick and the operator's bind: the platforms of a full
	// make test pick theirs at the same moments.
	Args func() ([]string, error)
	// Timeout bounds the wait for readiness; default 2 minutes (a start
	// takes seconds even under a full make test).
	Timeout time.Duration
}

// StartOperator starts the operator and returns once it is ready, or the
// reason it is not, with the log it wrote. Ready is its /readyz answering
// 200 (with webhooks: their server listening and its CA trusted) and the
// process itself listening on every port its flags name in --flag=value
// form (the probe's, --metrics-bind-address, --webhook-port): /readyz can
// answer before the metrics server has bound its port, and a 200 on a port
// another process took would be another operator's. An operator that
// exits at its start or never turns ready fails the start: unnoticed,
// every test after it waited for reconciles that never came (make test on
// f73909f). A start that failed on a port taken meanwhile is tried again,
// three attempts in all.
func StartOperator(s OperatorStart) (*Operator, error) {
	var err error
	for range 3 {
		var op *Operator
		if op, err = s.once(); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return op, err
		}
	}
	return nil, err
}

func (s OperatorStart) once() (*Operator, error) {
	args, err := s.Args()
	if err != nil {
		return nil, err
	}
	probe, err := FreePort()
	if err != nil {
		return nil, err
	}
	probeAddr := "127.0.0.1:" + strconv.Itoa(probe)
	logf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	st, err := logf.Stat()
	if err != nil {
		return nil, err
	}
	from := st.Size()
	args = append([]string{"--health-probe-bind-address=" + probeAddr}, args...)
	ports := flagPorts(args)
	cmd := exec.Command(s.Bin, append([]string{"operator"}, args...)...)
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A test binary that dies takes its operator with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	op := &Operator{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(op.exited)
	}()
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		select {
		case <-op.exited:
			return nil, fmt.Errorf("the operator exited at its start: %s", logFrom(s.Log, from))
		default:
		}
		if resp, err := client.Get("http://" + probeAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && listensOn(cmd.Process.Pid, ports) {
				return op, nil
			}
		}
		if time.Now().After(deadline) {
			op.Stop()
			return nil, fmt.Errorf("the operator was not ready within %s: %s", timeout, logFrom(s.Log, from))
		}
	}
}

// flagPorts are the ports the operator's flags make it listen on.
func flagPorts(args []string) []int {
	var ports []int
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			continue
		}
		switch name {
		case "--health-probe-bind-address", "--metrics-bind-address":
			_, value, _ = strings.Cut(value, ":")
		case "--webhook-port":
		default:
			continue
		}
		if port, err := strconv.Atoi(value); err == nil && port > 0 {
			ports = append(ports, port)
		}
	}
	return ports
}

// listensOn reports whether process pid holds a listening TCP socket on
// each of ports: the sockets /proc/<pid>/net/tcp{,6} lists in state LISTEN
// (0A) whose inode is one of the process's file descriptors.
func listensOn(pid int, ports []int) bool {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false
	}
	sockets := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			sockets[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	missing := map[int]bool{}
	for _, p := range ports {
		missing[p] = true
	}
	for _, table := range []string{"tcp", "tcp6"} {
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		for _, line := range strings.Split(string(raw), "\n") {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !sockets[f[9]] {
				continue
			}
			_, hex, _ := strings.Cut(f[1], ":")
			if port, err := strconv.ParseInt(hex, 16, 32); err == nil {
				delete(missing, int(port))
			}
		}
	}
	return len(missing) == 0
}

// logFrom is the log from offset from on, its last 2000 bytes.
func logFrom(path string, from int64) string {
	raw, err := os.ReadFile(path)
	if err != nil || int64(len(raw)) < from {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	raw = raw[from:]
	return string(raw[max(0, len(raw)-2000):])
}

// Kill ends the operator without a chance to clean up, as a node failure
// or an OOM kill would, and waits until it has exited.
func (op *Operator) Kill() {
	_ = op.cmd.Process.Kill()
	<-op.exited
}

// Stop ends it as Kubernetes would (SIGTERM, then SIGKILL after 10 s)
// and waits until it has exited.
func (op *Operator) Stop() { platform.TerminateWaited(op.cmd.Process, op.exited, 10*time.Second) }

// Exited is closed once the operator has exited.
func (op *Operator) Exited() <-chan struct{} { return op.exited }
