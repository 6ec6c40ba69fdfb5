package platform

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one child process of the platform.
type process struct {
	name string
	path string
	args []string
	log  string
	// appendLog keeps the log of an earlier run (a restart).
	appendLog bool

	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited
	exitErr  error         // valid after done is closed
	stopping bool          // set before a deliberate stop
	mu       sync.Mutex
}

// spawner starts every child from one goroutine locked to its OS thread for
// the life of the program. Children get PR_SET_PDEATHSIG=SIGKILL, so they die
// with this process even when it exits without running deferred cleanups
// (os.Exit, a test timeout, SIGKILL). Linux delivers that signal when the
// *thread* that forked the child exits; Go may retire threads, so the forking
// thread must be one that never exits.
var spawner = struct {
	once sync.Once
	reqs chan spawnRequest
}{reqs: make(chan spawnRequest)}

type spawnRequest struct {
	cmd *exec.Cmd
	err chan error
}

func spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: this thread lives as long as the program
			for r := range spawner.reqs {
				r.err <- r.cmd.Start()
			}
		}()
	})
	req := spawnRequest{cmd: cmd, err: make(chan error, 1)}
	spawner.reqs <- req
	return <-req.err
}

// start launches the process with its output appended to its log file.
// onExit runs (in its own goroutine) when the process exits.
func (p *process) start(onExit func(p *process)) error {
	mode := os.O_TRUNC
	if p.appendLog {
		mode = os.O_APPEND
	}
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|mode, 0o644)
	if err != nil {
		return fmt.Errorf("opening log of %s: %w", p.name, err)
	}
	fmt.Fprintf(logFile, "# %s %s\n", p.path, strings.Join(p.args, " "))
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C in the terminal reaches only us, and we
		// stop the children in order.
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
	if err := spawn(cmd); err != nil {
		logFile.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.exitErr = err
		close(p.done)
		if onExit != nil {
			onExit(p)
		}
	}()
	return nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// stop sends SIGTERM, waits up to grace, then sends SIGKILL and waits.
func (p *process) stop(grace time.Duration) {
	if p.cmd == nil {
		return
	}
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail(lines int) string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// The PID file records the children of the running platform, one
// "pid<TAB>name<TAB>path" per line, so a later start can remove the leftovers
// of a run that ended without stopping them.
const pidFileName = "pids"

func writePIDFile(stateDir string, procs []*process) error {
	var b bytes.Buffer
	// The first line names the process that owns the platform.
	if exe, err := os.Readlink("/proc/self/exe"); err == nil {
		fmt.Fprintf(&b, "%d\t%s\t%s\n", os.Getpid(), ownerEntry, exe)
	}
	for _, p := range procs {
		if p.cmd != nil {
			fmt.Fprintf(&b, "%d\t%s\t%s\n", p.pid(), p.name, p.path)
		}
	}
	tmp := filepath.Join(stateDir, pidFileName+".tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing PID file: %w", err)
	}
	return os.Rename(tmp, filepath.Join(stateDir, pidFileName))
}

// ownerEntry is the PID file's name for the process that started the children.
const ownerEntry = "owner"

// ErrInUse reports a state dir whose platform is still running in another
// process.
var ErrInUse = errors.New("state dir in use by a running platform")

// killLeftovers stops processes listed in the state dir's PID file that are
// still ours: same executable and a command line naming the state dir. A PID
// reused by an unrelated process is left alone. It returns the names of the
// processes it stopped, or ErrInUse when the process that started them is
// still running and is not this one.
func killLeftovers(stateDir string, grace time.Duration) ([]string, error) {
	path := filepath.Join(stateDir, pidFileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading PID file: %w", err)
	}
	type entry struct {
		pid        int
		name, path string
	}
	var entries []entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 3 {
			continue
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil || pid <= 1 {
			continue
		}
		if fields[1] == ownerEntry {
			// A live owner other than us is a platform still in use, not a
			// leftover; its children are not ours to stop.
			if pid != os.Getpid() && alive(pid) {
				if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == fields[2] {
					return nil, fmt.Errorf("%w: %s (pid %d) started it; stop it first or use another state dir",
						ErrInUse, stateDir, pid)
				}
			}
			continue
		}
		entries = append(entries, entry{pid, fields[1], fields[2]})
	}
	// Newest first, each given the grace period, as Stop does: the API
	// server shuts down quickly only while etcd still answers.
	var killed []string
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if !isOurProcess(e.pid, e.path, stateDir) {
			continue
		}
		if err := syscall.Kill(e.pid, syscall.SIGTERM); err != nil {
			continue
		}
		killed = append(killed, fmt.Sprintf("%s (pid %d)", e.name, e.pid))
		// Asked again before the SIGKILL: once the leftover is gone its PID
		// may belong to a process of someone else's (a busy machine cycles
		// through pid_max quickly); a zombie has no command line, so it
		// counts as gone.
		stillOurs := func() bool { return isOurProcess(e.pid, e.path, stateDir) }
		deadline := time.Now().Add(grace)
		for stillOurs() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if stillOurs() {
			_ = syscall.Kill(e.pid, syscall.SIGKILL)
			for j := 0; stillOurs() && j < 250; j++ {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return killed, fmt.Errorf("removing PID file: %w", err)
	}
	return killed, nil
}

// isOurProcess reports whether pid runs exe with stateDir in its arguments.
func isOurProcess(pid int, exe, stateDir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if args[0] != exe {
		return false
	}
	for _, a := range args[1:] {
		if strings.Contains(a, stateDir) {
			return true
		}
	}
	return false
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z'
}

// Terminate stops a started command as a kubelet stops a container: SIGTERM,
// up to grace for it to exit, then SIGKILL; it returns once the command is
// reaped. For the tiers' and the bench's own processes (the operator,
// Prometheus), which nothing else waits for.
func Terminate(cmd *exec.Cmd, grace time.Duration) {
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	TerminateWaited(cmd.Process, done, grace)
}

// TerminateWaited is Terminate for a process another goroutine waits
// for: exited is closed once it has.
func TerminateWaited(p *os.Process, exited <-chan struct{}, grace time.Duration) {
	select {
	case <-exited:
		return
	default:
	}
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = p.Kill()
		<-exited
	}
}
