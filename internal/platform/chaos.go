package platform

import (
	"context"
	"fmt"
	"os"
	"slices"
	"syscall"

	"k8s.io/client-go/kubernetes"
)

// Failure injection for chaos tests: a component restarted with the same
// flags and data (etcd keeps its data dir), or paused and resumed.

// Restart stops the named component (SIGTERM, then SIGKILL after the stop
// timeout), starts it again with the same arguments and waits until it
// serves again: etcd healthy, or the API server's /readyz. Its log is
// appended to.
func (p *Platform) Restart(ctx context.Context, name string) error {
	old, err := p.proc(name)
	if err != nil {
		return err
	}
	old.stop(p.opts.StopTimeout)
	proc := &process{name: old.name, path: old.path, args: old.args, log: old.log, appendLog: true}
	if err := proc.start(p.onExit); err != nil {
		return err
	}
	p.mu.Lock()
	i := slices.Index(p.procs, old)
	p.procs[i] = proc
	procs := slices.Clone(p.procs)
	p.mu.Unlock()
	if err := writePIDFile(p.opts.StateDir, procs); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	switch name {
	case Etcd:
		return p.poll(ctx, "etcd health after a restart", func(ctx context.Context) (bool, error) { return etcdHealthy(ctx, p.etcdURL) })
	case KubeAPIServer:
		cs, err := kubernetes.NewForConfig(p.RESTConfig())
		if err != nil {
			return err
		}
		return p.poll(ctx, "kube-apiserver /readyz after a restart", func(ctx context.Context) (bool, error) {
			_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err == nil, err
		})
	}
	return nil
}

// Pause stops the named component with SIGSTOP: it holds its connections
// and answers nothing, as a process stuck on a disk or starved of CPU.
func (p *Platform) Pause(name string) error { return p.signal(name, syscall.SIGSTOP) }

// Resume continues a paused component.
func (p *Platform) Resume(name string) error { return p.signal(name, syscall.SIGCONT) }

func (p *Platform) signal(name string, sig os.Signal) error {
	proc, err := p.proc(name)
	if err != nil {
		return err
	}
	return proc.cmd.Process.Signal(sig)
}

func (p *Platform) proc(name string) (*process, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, proc := range p.procs {
		if proc.name == name {
			return proc, nil
		}
	}
	return nil, fmt.Errorf("no component %q on this platform", name)
}
