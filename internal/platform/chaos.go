package platform

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Failure injection for chaos tests: a component restarted with the same
// flags and data (etcd keeps its data dir), or paused and resumed.

// Restart stops the named component (SIGTERM, then SIGKILL after the stop
// timeout), starts it again with the same arguments and waits until it
// serves again: etcd healthy, or the API server's /readyz. Its log is
// appended to.
func (p *Platform) Restart(ctx context.Context, name string) error {
	return p.RestartWith(ctx, name, nil)
}

// RestartWith is Restart that runs whileDown, when not nil, after the
// component has stopped and before it starts again; an error from it
// leaves the component stopped.
func (p *Platform) RestartWith(ctx context.Context, name string, whileDown func(context.Context) error) error {
	old, err := p.proc(name)
	if err != nil {
		return err
	}
	old.stop(p.opts.StopTimeout)
	if whileDown != nil {
		if err := whileDown(ctx); err != nil {
			return fmt.Errorf("while %s was down: %w", name, err)
		}
	}
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

// CompactEtcd writes one key outside the API server's prefix, so the
// revision moves past every resource version a client has seen, then
// compacts etcd's history up to that new revision and returns it. From
// then on no resource version below it can be watched or listed exactly:
// with the API server stopped around it, every watch resumes into a 410.
// It uses etcd's v3 HTTP/JSON gateway.
func (p *Platform) CompactEtcd(ctx context.Context) (int64, error) {
	var put struct {
		Header struct {
			Revision int64 `json:"revision,string"`
		} `json:"header"`
	}
	if err := p.etcdCall(ctx, "/v3/kv/put", map[string]string{
		"key":   base64.StdEncoding.EncodeToString([]byte("/datapilot-platform/compaction")),
		"value": base64.StdEncoding.EncodeToString([]byte(time.Now().UTC().Format(time.RFC3339Nano))),
	}, &put); err != nil {
		return 0, err
	}
	rev := put.Header.Revision
	if rev == 0 {
		return 0, fmt.Errorf("etcd put answered no revision")
	}
	// physical: the call returns once the history is gone, not when the
	// compaction is merely scheduled.
	if err := p.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

func (p *Platform) etcdCall(ctx context.Context, path string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.etcdURL+path, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, answer)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("etcd %s: %w in %s", path, err, answer)
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
