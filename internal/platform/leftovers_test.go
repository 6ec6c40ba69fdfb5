package platform

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/datapilot/datapilot/internal/testwait"
)

func TestKillLeftoversStopsOnlyOurProcesses(t *testing.T) {
	stateDir := t.TempDir()
	// Ours: the executable recorded in the PID file, with the state dir in
	// its arguments (sh makes it $0).
	// "; :" keeps the shell from exec-ing sleep in its place (dash does
	// that for a lone command), which would change the executable.
	ours := exec.Command("/bin/sh", "-c", "sleep 60; :", stateDir)
	// Not ours: same executable, other arguments.
	other := exec.Command("/bin/sh", "-c", "sleep 60; :", "unrelated")
	for _, c := range []*exec.Cmd{ours, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	// Between fork and exec a child's /proc cmdline is still this test
	// binary's, and killLeftovers rightly takes it for no leftover of ours:
	// wait until both run the shell (on a loaded machine that takes a
	// while; killed [] was this test's flake).
	for _, c := range []*exec.Cmd{ours, other} {
		want := c.Args[len(c.Args)-1]
		testwait.Until(t, 10*time.Second, func() error {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c.Process.Pid))
			if err != nil || !strings.Contains(string(b), want) {
				return fmt.Errorf("process %d has not exec'd the shell yet: %q", c.Process.Pid, b)
			}
			return nil
		})
	}
	reaped := make(chan struct{})
	go func() { _ = ours.Wait(); close(reaped) }()

	procs := []*process{
		{name: "ours", path: "/bin/sh", cmd: ours},
		{name: "other", path: "/bin/sh", cmd: other},
	}
	if err := writePIDFile(stateDir, procs); err != nil {
		t.Fatal(err)
	}
	killed, err := killLeftovers(stateDir, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 {
		t.Errorf("killed %v, want only ours", killed)
	}
	select {
	case <-reaped:
	case <-time.After(5 * time.Second):
		t.Error("Our leftover process is still running")
	}
	if !alive(other.Process.Pid) {
		t.Error("A process that is not ours was stopped")
	}
	if _, err := os.Stat(filepath.Join(stateDir, pidFileName)); !os.IsNotExist(err) {
		t.Errorf("PID file still exists: %v", err)
	}
}

func TestFakeNodePodCIDRsAreDistinct(t *testing.T) {
	seen := map[string]int{}
	for _, i := range []int{0, 1, 15, 16, 17, 255, 256, maxNodes - 1} {
		n, err := fakeNode(i, Options{NodeCPU: "64", NodeMemory: "256Gi", NodePods: 250})
		if err != nil {
			t.Fatal(err)
		}
		if j, dup := seen[n.Spec.PodCIDR]; dup {
			t.Errorf("Nodes %d and %d share pod CIDR %s", i, j, n.Spec.PodCIDR)
		}
		seen[n.Spec.PodCIDR] = i
	}
	n, _ := fakeNode(0, Options{NodeCPU: "64", NodeMemory: "256Gi", NodePods: 250})
	if n.Spec.PodCIDR != "10.64.0.0/20" {
		t.Errorf("Node 0 pod CIDR = %s, want 10.64.0.0/20", n.Spec.PodCIDR)
	}
	last, _ := fakeNode(maxNodes-1, Options{NodeCPU: "64", NodeMemory: "256Gi", NodePods: 250})
	if last.Spec.PodCIDR != "10.255.240.0/20" {
		t.Errorf("Last node pod CIDR = %s, want 10.255.240.0/20", last.Spec.PodCIDR)
	}
}

func TestKillLeftoversRefusesAStateDirInUse(t *testing.T) {
	stateDir := t.TempDir()
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", owner.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	pidFile := fmt.Sprintf("%d\t%s\t%s\n", owner.Process.Pid, ownerEntry, exe)
	if err := os.WriteFile(filepath.Join(stateDir, pidFileName), []byte(pidFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := killLeftovers(stateDir, time.Second); !errors.Is(err, ErrInUse) {
		t.Errorf("killLeftovers() error = %v, want ErrInUse", err)
	}
	if !alive(owner.Process.Pid) {
		t.Error("The owner was stopped")
	}
}
