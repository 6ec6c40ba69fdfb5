package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"

	"github.com/datapilot/datapilot/internal/flinksim"
	"github.com/datapilot/datapilot/internal/operator"
	"github.com/datapilot/datapilot/internal/platform"
)

// localUpFlags are the settings of `datapilot-local up`.
type localUpFlags struct {
	platform platform.Options
	operator operator.Options
	envErr   error
	// simAddr is where the Flink REST simulator listens.
	simAddr string
	verbose bool
}

func newLocalUpCommand() *cobra.Command {
	f := &localUpFlags{}
	f.operator, f.envErr = operator.Defaults()
	// One operator in this process: no election, and no fixed ports that
	// could clash with something already running on the machine.
	f.operator.LeaderElection = false
	f.operator.MetricsAddr = "0"
	f.operator.ProbeAddr = "0"
	// The conversion webhook (data.example.com/v1alpha1) on a free loopback
	// port, chosen at start; the operator points the CRD at it by URL.
	f.operator.WebhookCertMode = operator.WebhookCertSelfSigned
	f.operator.WebhookHost = "127.0.0.1"
	f.operator.WebhookPort = 0
	// The simulator serves the examples' jars on loopback.
	if len(f.operator.JarAllowedHosts) == 0 {
		f.operator.JarAllowedHosts = []string{platform.JarHost}
	}
	// The platform's shared storage, unless the environment names another.
	if f.operator.StateStorageURI == "" && f.operator.StateStorageClaim == "" {
		f.operator.StateStorageURI = platform.StateStorageURI
	}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start etcd, kube-apiserver, controller-manager, scheduler, kwok fake nodes, the Flink REST simulator and the operator",
		Long: `Start a local Kubernetes control plane from bin/ (run 'make tools' first) with
kwok fake nodes, install Datapilot's CRDs, start the Flink REST simulator and
the operator in this process, and run until interrupted. Ctrl-C stops
everything. The admin kubeconfig is <state-dir>/kubeconfig. The terminal shows
progress and next steps; every log (etcd, kube-apiserver, kube-controller-
manager, kube-scheduler, kwok, the simulator and the operator) is a file in
<state-dir>/logs, and --verbose streams them here as well.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.envErr != nil {
				return f.envErr
			}
			return localUp(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.platform.Nodes, "nodes", 4, "Number of kwok fake nodes.")
	fs.StringVar(&f.platform.NodeCPU, "node-cpu", "64", "CPU capacity of each fake node.")
	fs.StringVar(&f.platform.NodeMemory, "node-memory", "256Gi", "Memory capacity of each fake node.")
	fs.IntVar(&f.platform.NodePods, "node-pods", 250, "Pod capacity of each fake node.")
	fs.StringVar(&f.platform.StateDir, "state-dir", "", "Directory for data, certificates, kubeconfig and logs; replaced on every start (default <project root>/.datapilot).")
	fs.StringVar(&f.platform.BinDir, "bin-dir", "", "Directory holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (default <project root>/bin).")
	fs.StringVar(&f.platform.AuditLogPath, "audit-log", "", "Write the API server's audit log of every write (JSON lines) to this file.")
	fs.StringVar(&f.simAddr, "flink-rest-addr", defaultSimAddr, "Listen address of the Flink REST simulator (a free port when the default is taken); ignored with --flink-rest-override.")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "Stream the component, simulator and operator logs to the terminal (they are always in <state-dir>/logs).")
	f.operator.BindFlags(fs)
	return cmd
}

func localUp(ctx context.Context, stdout, stderr io.Writer, f *localUpFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	// The terminal shows the platform's progress in plain words and then
	// the next steps; the components', simulator's and operator's logs go
	// to files under <state-dir>/logs, streamed here too with --verbose.
	progress := newProgressLogger(stderr, 1)
	fmt.Fprintln(stderr, "Starting a local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok...")
	po := f.platform
	po.Logger = progress
	po.FlinkHARole = true
	p, err := platform.Start(ctx, po)
	if err != nil {
		return fmt.Errorf("starting the local platform: %w", err)
	}
	// Stop the children on every way out of this function; they also die
	// with this process if it is killed (see platform's PDEATHSIG).
	defer func() {
		fmt.Fprintln(stderr, "Stopping the local platform...")
		_ = p.Stop()
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logsDir := filepath.Join(p.StateDir(), "logs")
	simLog, err := logFile(logsDir, "flink-rest-simulator")
	if err != nil {
		return err
	}
	defer simLog.Close()
	opLog, err := logFile(logsDir, "operator")
	if err != nil {
		return err
	}
	defer opLog.Close()
	if f.verbose {
		go followLogs(ctx, logsDir, stderr, 250*time.Millisecond)
	}
	log := funcr.New(func(prefix, args string) {
		fmt.Fprintf(simLog, "%s %s %s\n", time.Now().Format(time.RFC3339Nano), prefix, args)
	}, funcr.Options{})
	errc := make(chan error, 2)
	running := 0

	opts := f.operator
	opts.LogOutput = opLog
	if opts.FlinkRESTOverride == "" {
		progress.Info("Starting the Flink REST simulator")
		sim, err := startFlinkSimulator(ctx, p, f.simAddr, log, errc)
		if err != nil {
			return err
		}
		running++
		opts.FlinkRESTOverride = sim.BaseURLTemplate()
		opts.FlinkRESTPodOverride = sim.PodURLTemplate()
	}

	if err := localWebhook(&opts); err != nil {
		return err
	}
	cfg := p.RESTConfig()
	cfg.QPS, cfg.Burst = 100, 200
	progress.Info("Starting the operator", "log", relPath(opLog.Name()))
	running++
	go func() {
		err := operator.Run(ctx, cfg, opts)
		if err == nil && ctx.Err() == nil {
			err = errors.New("operator stopped")
		}
		errc <- err
	}()

	printNextSteps(stdout, p, opts.FlinkRESTOverride, opts.WebhookURL)

	var runErr error
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "Interrupted.")
	case runErr = <-errc:
		running--
	case runErr = <-p.Failed():
	}
	// A second Ctrl-C now kills this process at once; the children follow it.
	stopSignals()
	cancel()
	timeout := time.After(15 * time.Second)
	for ; running > 0; running-- {
		select {
		case <-errc:
		case <-timeout:
			running = 0
		}
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return nil
}

// localWebhook gives a self-signed conversion webhook without a Service or
// URL of its own a loopback URL the local API server can call: on
// --webhook-port, or on a free port when that is 0.
func localWebhook(o *operator.Options) error {
	if o.WebhookCertMode != operator.WebhookCertSelfSigned || o.WebhookService != "" || o.WebhookURL != "" {
		return nil
	}
	if o.WebhookHost == "" {
		o.WebhookHost = "127.0.0.1"
	}
	if o.WebhookPort == 0 {
		l, err := net.Listen("tcp", net.JoinHostPort(o.WebhookHost, "0"))
		if err != nil {
			return fmt.Errorf("finding a port for the conversion webhook: %w", err)
		}
		o.WebhookPort = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	o.WebhookURL = "https://" + net.JoinHostPort(o.WebhookHost, strconv.Itoa(o.WebhookPort)) + "/convert"
	return nil
}

// defaultSimAddr is where the simulator listens unless told otherwise; the
// job example's jarURI points at its /artifacts/.
const defaultSimAddr = "127.0.0.1:8089"

// startFlinkSimulator starts the Flink REST simulator against the platform;
// its exit is reported on errc.
func startFlinkSimulator(ctx context.Context, p *platform.Platform, addr string, log logr.Logger, errc chan<- error) (*flinksim.Simulator, error) {
	sim, err := flinksim.New(p.RESTConfig(), flinksim.Options{ListenAddr: addr, Log: log})
	if err != nil && addr == defaultSimAddr {
		// examples/streaming-job.yaml fetches its jar from the default
		// address; anywhere else works too, with the printed URL.
		log.Info("Default address taken, using a free port", "addr", addr)
		sim, err = flinksim.New(p.RESTConfig(), flinksim.Options{ListenAddr: "127.0.0.1:0", Log: log})
	}
	if err != nil {
		return nil, err
	}
	go func() {
		err := sim.Start(ctx)
		if err == nil && ctx.Err() == nil {
			err = errors.New("Flink REST simulator stopped")
		}
		errc <- err
	}()
	return sim, nil
}

func printNextSteps(w io.Writer, p *platform.Platform, flinkREST, webhookURL string) {
	root := platform.ProjectRoot()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	fmt.Fprintf(w, `
Datapilot is running on a local control plane (started in %s).
  kubeconfig:  %s
  logs:        %s (operator.log, flink-rest-simulator.log, kube-apiserver.log, ...; --verbose streams them)
  Flink REST:  %s
  conversion:  %s (data.example.com/v1alpha1 <-> v1)

`, p.StartupDuration().Round(time.Millisecond), p.KubeconfigPath(), relPath(filepath.Join(p.StateDir(), "logs")), flinkREST, webhookURL)
	var steps []platform.TourStep
	if err == nil {
		steps = platform.Tour(string(readme))
	}
	printTour(w, steps, relPath(root), p.KubeconfigPath(), !strings.Contains(flinkREST, "//"+defaultSimAddr+"/"))
	fmt.Fprintln(w, "\nPress Ctrl-C to stop everything.")
}

// printTour prints the README tour's commands, read from the README so
// that they are the ones it explains. Its commands name bin/ and
// examples/ from the project root, and the kubeconfig of the default
// state directory: the export printed is this platform's.
func printTour(w io.Writer, steps []platform.TourStep, root, kubeconfig string, otherSimAddr bool) {
	where := ""
	if root != "." {
		where = ", in " + root
	}
	if len(steps) == 0 {
		fmt.Fprintf(w, "The tour: README.md, %q (in another terminal%s, export KUBECONFIG=%s).\n", strings.TrimPrefix(platform.TourHeading, "## "), where, kubeconfig)
		return
	}
	fmt.Fprintf(w, "The tour (README.md, %q), in another terminal%s:\n", strings.TrimPrefix(platform.TourHeading, "## "), where)
	for _, s := range steps {
		fmt.Fprintln(w)
		if s.Title != "" {
			fmt.Fprintf(w, "  # %s\n", s.Title)
		}
		for _, l := range s.Lines {
			if strings.HasPrefix(l, "export KUBECONFIG=") {
				l = "export KUBECONFIG=" + kubeconfig
			}
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if otherSimAddr {
		fmt.Fprintf(w, "\nFlink REST is not on %s: use its address above in these commands and in the examples' jarURI.\n", defaultSimAddr)
	}
}

// logFile creates <dir>/<name>.log for one process's logs.
func logFile(dir, name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the %s log: %w", name, err)
	}
	return f, nil
}

// relPath shortens path relative to the working directory when it is inside it.
func relPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || filepath.IsAbs(rel) || len(rel) >= 2 && rel[:2] == ".." {
		return path
	}
	return rel
}
