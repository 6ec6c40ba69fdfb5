package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/datapilot/datapilot/internal/platform"
)

// operatorProc is bin/datapilot operator as a child process, with its
// metrics endpoint on a known loopback port.
type operatorProc struct {
	cmd         *exec.Cmd
	metricsAddr string
	// pprofAddr serves pprof when asked for; empty otherwise.
	pprofAddr string
}

// startOperator starts the operator, with pprof on a port of its own when
// pprof is set, and env added to the bench's environment.
func startOperator(bin string, pprof bool, env []string, args ...string) (*operatorProc, error) {
	addr, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	o := &operatorProc{metricsAddr: addr}
	flags := []string{"operator", "--metrics-bind-address=" + addr, "--health-probe-bind-address=0"}
	if pprof {
		if o.pprofAddr, err = loopbackAddr(); err != nil {
			return nil, err
		}
		flags = append(flags, "--pprof-bind-address="+o.pprofAddr)
	}
	o.cmd = exec.Command(bin, append(flags, args...)...)
	o.cmd.Stdout, o.cmd.Stderr = os.Stdout, os.Stderr
	if env != nil {
		o.cmd.Env = append(os.Environ(), env...)
	}
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := o.cmd.Start(); err != nil {
		return nil, err
	}
	return o, nil
}

func loopbackAddr() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(port), nil
}

func (o *operatorProc) pid() int { return o.cmd.Process.Pid }

// stop ends the operator gracefully (it releases its lease).
func (o *operatorProc) stop() {
	if o == nil || o.cmd.ProcessState != nil {
		return
	}
	platform.Terminate(o.cmd, 15*time.Second)
}

// kill ends it as a node failure would: the lease stays until it expires.
func (o *operatorProc) kill() {
	_ = o.cmd.Process.Kill()
	_ = o.cmd.Wait()
}

// waitMetrics waits until the metrics endpoint answers.
func (o *operatorProc) waitMetrics(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := scrape(o.metricsAddr); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("metrics of the operator (pid %d) did not answer within %s", o.pid(), timeout)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// saveHeapProfile writes the operator's heap profile to <prefix>-<phase>.pb.gz;
// nothing when prefix is empty.
func saveHeapProfile(pprofAddr, prefix, phase string) error {
	if prefix == "" {
		return nil
	}
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: %s", resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(prefix+"-"+phase+".pb.gz", raw, 0o644)
}
