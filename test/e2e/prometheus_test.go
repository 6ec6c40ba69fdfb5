package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/datapilot/datapilot/internal/platform"
	"github.com/datapilot/datapilot/internal/testenv"
)

// prometheusServer is bin/prometheus scraping the operator's metrics
// endpoint as a ServiceMonitor of the chart has it: HTTPS, a bearer token
// of a ServiceAccount allowed get on /metrics, the operator's self-signed
// certificate not verified (loopback), the clusters' namespace label
// honoured, and the target's namespace the operator's.
type prometheusServer struct {
	url     string
	started time.Time
	// readyAfter is how long it took to answer /-/ready.
	readyAfter time.Duration
	cmd        *exec.Cmd
}

// prometheusConfig scrapes every second: the tests' clusters live seconds.
const prometheusConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: datapilot
    scheme: https
    honor_labels: true
    authorization:
      type: Bearer
      credentials_file: %s
    tls_config:
      insecure_skip_verify: true
    static_configs:
      - targets: [%q]
        labels:
          namespace: datapilot-system
`

// startPrometheus starts bin/prometheus with its storage in dir and waits
// until it is ready.
func startPrometheus(ctx context.Context, bin, dir, target, token string) (*prometheusServer, error) {
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, prometheusConfig, tokenFile, target), 0o644); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(bin, "prometheus"), "--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &prometheusServer{url: "http://" + addr, started: time.Now(), cmd: cmd}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				p.readyAfter = time.Since(p.started)
				return p, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.stop()
			return nil, fmt.Errorf("prometheus not ready at %s (log in %s): %v", p.url, logf.Name(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *prometheusServer) stop() {
	platform.Terminate(p.cmd, 10*time.Second)
}

// sample is one series of an instant query's result.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query through Prometheus' HTTP API.
func (p *prometheusServer) query(ctx context.Context, q string) ([]sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/api/v1/query", strings.NewReader(url.Values{"query": {q}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("decode the answer to %q: %w", q, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, body.Error)
	}
	if body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: a %s, want a vector", q, body.Data.ResultType)
	}
	return body.Data.Result, nil
}

// freeAddr is a loopback address with a port free at the time of the call
// (testenv.FreePort).
func freeAddr() (string, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(port), nil
}
