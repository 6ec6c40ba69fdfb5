package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/testenv"
)

// operatorProc is bin/datapilot operator as a child process, with its
// metrics endpoint on a known loopback port. It is supervised as a
// Deployment's pod would be: a process that exits by itself (as the
// operator does when it loses its lease) is started again with the same
// flags, the first time at once and then after a backoff doubling from
// 10 s, as the kubelet restarts a crashed container. stop and kill end
// it for good.
type operatorProc struct {
	bin         string
	args, env   []string
	metricsAddr string
	// pprofAddr serves pprof when asked for; empty otherwise.
	pprofAddr string

	mu  sync.Mutex
	cmd *exec.Cmd
	// exited is closed when cmd has exited; ended is set by stop and kill.
	exited chan struct{}
	ended  bool
	// restarts are the exits the supervisor restarted after; gone* are
	// the CPU time and peak resident set of the processes that exited.
	restarts []restart
	goneCPU  float64
	gonePeak int64
}

// restart is one exit of the operator that the bench did not ask for.
type restart struct {
	at     time.Time
	status string
}

// startOperator starts the operator, with pprof on a port of its own when
// pprof is set, and env added to the bench's environment.
func startOperator(bin string, pprof bool, env []string, args ...string) (*operatorProc, error) {
	addr, err := loopbackAddr()
	if err != nil {
		return nil, err
	}
	o := &operatorProc{bin: bin, env: env, metricsAddr: addr}
	flags := []string{"operator", "--metrics-bind-address=" + addr, "--health-probe-bind-address=0"}
	if pprof {
		if o.pprofAddr, err = loopbackAddr(); err != nil {
			return nil, err
		}
		flags = append(flags, "--pprof-bind-address="+o.pprofAddr)
	}
	o.args = append(flags, args...)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.spawn(); err != nil {
		return nil, err
	}
	return o, nil
}

// spawn starts the process and its supervisor; o.mu is held.
func (o *operatorProc) spawn() error {
	cmd := exec.Command(o.bin, o.args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if o.env != nil {
		cmd.Env = append(os.Environ(), o.env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	o.cmd, o.exited = cmd, exited
	go o.supervise(cmd, exited)
	return nil
}

// supervise waits for cmd and, unless it was ended on purpose, starts
// the operator again.
func (o *operatorProc) supervise(cmd *exec.Cmd, exited chan struct{}) {
	err := cmd.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	close(exited)
	if st := cmd.ProcessState; st != nil {
		o.goneCPU += (st.UserTime() + st.SystemTime()).Seconds()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			o.gonePeak = max(o.gonePeak, ru.Maxrss*1024) // kilobytes on Linux
		}
	}
	if o.ended {
		return
	}
	status := "exited"
	if err != nil {
		status = err.Error()
	}
	o.restarts = append(o.restarts, restart{at: time.Now(), status: status})
	backoff := time.Duration(0)
	if n := len(o.restarts); n > 1 {
		backoff = min(10*time.Second<<(n-2), 5*time.Minute)
	}
	fmt.Printf("Operator (pid %d) %s; restarting it in %s, as a Deployment would (restart %d)\n", cmd.Process.Pid, status, backoff, len(o.restarts))
	go func() {
		time.Sleep(backoff)
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.ended {
			return
		}
		if err := o.spawn(); err != nil {
			fmt.Printf("Operator could not be restarted: %v\n", err)
		}
	}()
}

func loopbackAddr() (string, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(port), nil
}

// pid is the running process's.
func (o *operatorProc) pid() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cmd.Process.Pid
}

// cpuSeconds is the CPU time of every process the operator has run as.
func (o *operatorProc) cpuSeconds() float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.goneCPU + cpuSeconds(o.cmd.Process.Pid)
}

// peakRSS is the highest resident set of any of its processes.
func (o *operatorProc) peakRSS() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return max(o.gonePeak, peakRSS(o.cmd.Process.Pid))
}

// restarted is the exits the supervisor restarted after.
func (o *operatorProc) restarted() []restart {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.restarts)
}

// stop ends the operator gracefully (it releases its lease).
func (o *operatorProc) stop() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.ended = true
	cmd, exited := o.cmd, o.exited
	o.mu.Unlock()
	platform.TerminateWaited(cmd.Process, exited, 15*time.Second)
}

// kill ends it as a node failure would: the lease stays until it expires.
func (o *operatorProc) kill() {
	o.mu.Lock()
	o.ended = true
	cmd, exited := o.cmd, o.exited
	o.mu.Unlock()
	_ = cmd.Process.Kill()
	<-exited
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

// saveHeapProfile writes the operator's heap profile to <prefix>-<phase>.pb.gz;
// nothing when prefix is empty.
func saveHeapProfile(pprofAddr, prefix, phase string) error {
	if prefix == "" {
		return nil
	}
	raw, err := httpGet(context.Background(), "http://"+pprofAddr+"/debug/pprof/heap")
	if err != nil {
		return err
	}
	return os.WriteFile(prefix+"-"+phase+".pb.gz", raw, 0o644)
}

// memBreakdown is what a resident set is made of: the kernel's split of
// it (smaps_rollup) and the Go runtime's account of the anonymous part
// (its metrics), so a memory figure says what could shrink.
type memBreakdown struct {
	anon, file                       int64
	heapInuse, heapUnreturned, stack int64
}

func readMemBreakdown(o *operatorProc) memBreakdown {
	path := fmt.Sprintf("/proc/%d/smaps_rollup", o.pid())
	anon := procKB(path, "Anonymous:") * 1024
	m := memBreakdown{anon: anon, file: procKB(path, "Rss:")*1024 - anon}
	if p, err := scrape(o.metricsAddr); err == nil {
		m.heapInuse = int64(p.sum("go_memstats_heap_inuse_bytes"))
		m.heapUnreturned = int64(p.sum("go_memstats_heap_idle_bytes") - p.sum("go_memstats_heap_released_bytes"))
		m.stack = int64(p.sum("go_memstats_stack_inuse_bytes"))
	}
	return m
}

func (m memBreakdown) String() string {
	return fmt.Sprintf("%s (%s; %s; %s) + %s", mib(m.anon), mib(m.heapInuse), mib(m.heapUnreturned), mib(m.stack), mib(m.file))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// profileCPU profiles the bench process, the API server and the
// operator over one phase of the last round, when asked to; the returned
// func ends the profiles and writes them.
func (c config) profileCPU(round int, phase string) (stop func()) {
	last := round == c.rounds-1
	var stops []func()
	if c.apiserver != nil && last {
		stops = append(stops, profileParts(c.apiserverProfile, phase, func(ctx context.Context) ([]byte, error) {
			return c.apiserver.Get().AbsPath("/debug/pprof/profile").Param("seconds", "10").DoRaw(ctx)
		}))
	}
	if c.operatorProfile != "" && c.operatorPprof != "" && last {
		stops = append(stops, profileParts(c.operatorProfile, phase, func(ctx context.Context) ([]byte, error) {
			return httpGet(ctx, "http://"+c.operatorPprof+"/debug/pprof/profile?seconds=10")
		}))
	}
	stops = append(stops, c.profileBench(round, phase))
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

func profileName(prefix, phase string) string {
	return prefix + "-" + strings.NewReplacer(" ", "-", "'", "", "(", "", ")", "").Replace(phase)
}

// profileParts takes a process's CPU profile in 10 s parts until stopped:
// a pprof handler profiles for a duration fixed up front, and a phase's is
// not known.
func profileParts(prefix, phase string, get func(context.Context) ([]byte, error)) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for k := 0; ; k++ {
			raw, err := get(context.Background())
			if err == nil {
				err = os.WriteFile(fmt.Sprintf("%s-%d.pb.gz", profileName(prefix, phase), k), raw, 0o644)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench: CPU profile:", prefix, err)
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// httpGet is the body of a GET that answered 200.
func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// profileBench profiles the bench process itself.
func (c config) profileBench(round int, phase string) (stop func()) {
	if c.cpuProfile == "" || round != c.rounds-1 {
		return func() {}
	}
	f, err := os.Create(profileName(c.cpuProfile, phase) + ".pb.gz")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: CPU profile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "bench: CPU profile:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// builds says what the measured operator binary and the bench's own
// checkout were built from: `go run ./bench` compiles the bench (and its
// Flink simulator) afresh but runs bin/datapilot as it is, which may be
// older than the checkout (make bench builds it first).
func builds(ctx context.Context, bin, root string) string {
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	operator := strings.TrimSpace(string(out))
	if err != nil {
		operator = "unknown (" + err.Error() + ")"
	}
	head, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	checkout := strings.TrimSpace(string(head))
	if err != nil {
		return fmt.Sprintf("Operator: %s; the bench's checkout: unknown (%v).", operator, err)
	}
	if status, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(status) > 0 {
		checkout += " with uncommitted changes"
	}
	note := ""
	if rev := revisionOf(operator); rev != "" && !strings.HasPrefix(checkout, rev) {
		note = " The operator binary is not the checkout's: run `make build` first to measure the checkout."
	}
	return fmt.Sprintf("Operator: %s; the bench and its Flink simulator: the checkout at %s.%s", operator, checkout, note)
}

// revisionOf is the revision in `datapilot version`'s line.
func revisionOf(version string) string {
	_, rest, ok := strings.Cut(version, "(revision ")
	if !ok {
		return ""
	}
	rev, _, _ := strings.Cut(rest, ",")
	return strings.TrimSpace(rev)
}
