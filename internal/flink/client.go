// Package flink talks to a Flink JobManager: its REST API (client.go,
// types.go), where that API is (resolver.go) and the configuration keys of
// each Flink version (config.go).
package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"
)

// Defaults of a new Client.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultMaxRetries     = 2
	DefaultRetryBackoff   = 200 * time.Millisecond
	// JarRunTimeout bounds a jar run (RunJar).
	JarRunTimeout = 2 * time.Minute
)

// Client calls one Flink cluster's REST API. It is safe for concurrent use.
//
// Only GETs are retried. A POST that triggers a savepoint, a checkpoint or a
// stop is sent exactly once: a retry after a lost response would start a
// second operation, and a duplicate stop-with-savepoint is a known failure in
// other operators. Callers that must be able to retry set a TriggerID, which
// Flink deduplicates.
type Client struct {
	baseURL string
	http    *http.Client

	// RequestTimeout bounds each attempt.
	RequestTimeout time.Duration
	// MaxRetries is how many times a failed GET is retried when the error
	// is transient (unreachable, 5xx, 429).
	MaxRetries int
	// RetryBackoff is the first wait between retries; it doubles each time.
	RetryBackoff time.Duration
}

// NewClient returns a client for the REST API at baseURL, such as
// http://demo-jobmanager.ns.svc:8081 (see Resolver). A nil httpClient
// means http.DefaultClient.
func NewClient(baseURL string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{
		baseURL:        strings.TrimRight(baseURL, "/"),
		http:           httpClient,
		RequestTimeout: DefaultRequestTimeout,
		MaxRetries:     DefaultMaxRetries,
		RetryBackoff:   DefaultRetryBackoff,
	}
}

// BaseURL is where the client sends requests.
func (c *Client) BaseURL() string { return c.baseURL }

// Error is a failed REST call. StatusCode is 0 when no HTTP response
// arrived (connection refused, DNS, timeout); Err then holds the cause.
type Error struct {
	// Method and Endpoint name the operation as the schema does, such as
	// POST /jobs/{jobid}/savepoints.
	Method   string
	Endpoint string
	// URL is the URL that was requested.
	URL        string
	StatusCode int
	// Messages are Flink's own error messages from the response body.
	Messages []string
	Err      error
}

func (e *Error) Error() string {
	op := e.Method + " " + e.Endpoint
	if e.StatusCode == 0 {
		return fmt.Sprintf("Flink REST %s: unreachable: %s", op, withoutLocalAddress(e.Err))
	}
	msg := fmt.Sprintf("Flink REST %s: HTTP %d", op, e.StatusCode)
	if len(e.Messages) > 0 {
		// Flink puts a whole stack trace in a message; the first line is enough.
		first, _, _ := strings.Cut(e.Messages[0], "\n")
		msg += ": " + first
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// withoutLocalAddress is err's message without the address and port the
// client's end of the connection had ("read tcp 10.0.0.7:41634->..."), a
// new one for each connection: the same failure must read the same each
// time. The health checks put this message in their verdict, whose change
// wakes a reconcile and writes the conditions; a connection reset read as a
// new message at every probe, and a starting JobManager whose REST port
// reset connections was probed in a loop, hundreds of times a second. The
// text is edited, not the net.OpError: a resolver's failure keeps the
// OpError of its query to the DNS server only as text (net.DNSError.Err),
// and a refusing DNS server would start the same loop for every cluster.
func withoutLocalAddress(err error) string {
	if err == nil {
		return fmt.Sprint(err)
	}
	return localEnd.ReplaceAllString(err.Error(), "$1 ")
}

// localEnd is the local end of a connection in a net.OpError's text,
// "tcp <local>-><remote>": the network is kept, the local address dropped.
var localEnd = regexp.MustCompile(`\b((?:tcp|udp)[46]?) [^\s>]+->`)

// Unavailable reports whether the API could not serve the request right
// now: no connection, or 502/503/504. Such errors are worth retrying later
// and, alone, are no sign that the cluster is broken.
func (e *Error) Unavailable() bool {
	switch e.StatusCode {
	case 0, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// IsNotFound reports whether err is a REST 404 (unknown job, trigger or jar).
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// IsDuplicateSubmission reports whether err is Flink refusing a job ID it
// knows: one still running, or one its job result store records as
// globally terminal (Dispatcher#submitJob's DuplicateJobSubmissionException;
// the two carry the same message). Through POST /jars/{jarid}/run it is a
// 400 whose trace names the exception (JarRunHandler#handleRequest), in
// every supported minor; 2.3's EmbeddedExecutor answers a terminal ID's
// run as a success instead, to be rechecked before 2.3 is supported.
func IsDuplicateSubmission(err error) bool {
	return answered(err, http.StatusBadRequest, "DuplicateJobSubmissionException")
}

// ResultOnlyJobName is the name under which Flink shows a job it knows only
// by its result: the sparse graph of a CheckpointResourcesCleanupRunner
// (a JobManager that took over the job's cleanup), which has no vertices
// and no checkpoint statistics.
const ResultOnlyJobName = "unknown"

// IsHistoryAbsent reports whether err is Flink answering that a job it
// knows has no checkpoint statistics: a 404 "Checkpointing has not been
// enabled." (CheckpointingStatisticsHandler#createCheckpointingStatistics,
// the same text in every supported minor), not an unknown job's 404.
func IsHistoryAbsent(err error) bool {
	return answered(err, http.StatusNotFound, "Checkpointing has not been enabled")
}

// answered reports whether err is Flink answering status with a message
// (or the trace in it) that contains text.
func answered(err error, status int, text string) bool {
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != status {
		return false
	}
	for _, m := range e.Messages {
		if strings.Contains(m, text) {
			return true
		}
	}
	return false
}

// IsUnavailable reports whether err means the REST API was unreachable or
// answered 502/503/504.
func IsUnavailable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Unavailable()
}

// Overview is GET /overview.
func (c *Client) Overview(ctx context.Context) (*ClusterOverview, error) {
	var out ClusterOverview
	return &out, c.get(ctx, "/overview", "/overview", &out)
}

// DashboardConfiguration is GET /config; it carries the Flink version.
func (c *Client) DashboardConfiguration(ctx context.Context) (*DashboardConfiguration, error) {
	var out DashboardConfiguration
	return &out, c.get(ctx, "/config", "/config", &out)
}

// Jobs is GET /jobs: every job's ID and status.
func (c *Client) Jobs(ctx context.Context) (*JobIDsWithStatusOverview, error) {
	var out JobIDsWithStatusOverview
	return &out, c.get(ctx, "/jobs", "/jobs", &out)
}

// JobsOverview is GET /jobs/overview.
func (c *Client) JobsOverview(ctx context.Context) (*MultipleJobsDetails, error) {
	var out MultipleJobsDetails
	return &out, c.get(ctx, "/jobs/overview", "/jobs/overview", &out)
}

// Job is GET /jobs/{jobid}.
func (c *Client) Job(ctx context.Context, jobID string) (*JobDetailsInfo, error) {
	var out JobDetailsInfo
	return &out, c.get(ctx, "/jobs/{jobid}", "/jobs/"+url.PathEscape(jobID), &out)
}

// Checkpoints is GET /jobs/{jobid}/checkpoints.
func (c *Client) Checkpoints(ctx context.Context, jobID string) (*CheckpointingStatistics, error) {
	var out CheckpointingStatistics
	return &out, c.get(ctx, "/jobs/{jobid}/checkpoints", "/jobs/"+url.PathEscape(jobID)+"/checkpoints", &out)
}

// TriggerCheckpoint is POST /jobs/{jobid}/checkpoints (Flink 1.19+). It
// returns the trigger ID to poll with CheckpointStatus. Never retried.
func (c *Client) TriggerCheckpoint(ctx context.Context, jobID string, req CheckpointTriggerRequest) (string, error) {
	var out TriggerResponse
	err := c.once(ctx, http.MethodPost, "/jobs/{jobid}/checkpoints", "/jobs/"+url.PathEscape(jobID)+"/checkpoints", nil, req, &out)
	return out.RequestID, err
}

// CheckpointStatus is GET /jobs/{jobid}/checkpoints/{triggerid}.
func (c *Client) CheckpointStatus(ctx context.Context, jobID, triggerID string) (*CheckpointOperation, error) {
	var out CheckpointOperation
	return &out, c.get(ctx, "/jobs/{jobid}/checkpoints/{triggerid}",
		"/jobs/"+url.PathEscape(jobID)+"/checkpoints/"+url.PathEscape(triggerID), &out)
}

// TriggerSavepoint is POST /jobs/{jobid}/savepoints. It returns the trigger
// ID to poll with SavepointStatus. Never retried.
func (c *Client) TriggerSavepoint(ctx context.Context, jobID string, req SavepointTriggerRequest) (string, error) {
	var out TriggerResponse
	err := c.once(ctx, http.MethodPost, "/jobs/{jobid}/savepoints", "/jobs/"+url.PathEscape(jobID)+"/savepoints", nil, req, &out)
	return out.RequestID, err
}

// SavepointStatus is GET /jobs/{jobid}/savepoints/{triggerid}; it also
// reports on stop-with-savepoint operations.
func (c *Client) SavepointStatus(ctx context.Context, jobID, triggerID string) (*SavepointOperation, error) {
	var out SavepointOperation
	return &out, c.get(ctx, "/jobs/{jobid}/savepoints/{triggerid}",
		"/jobs/"+url.PathEscape(jobID)+"/savepoints/"+url.PathEscape(triggerID), &out)
}

// StopWithSavepoint is POST /jobs/{jobid}/stop. It returns the trigger ID
// to poll with SavepointStatus. Never retried.
func (c *Client) StopWithSavepoint(ctx context.Context, jobID string, req StopWithSavepointRequest) (string, error) {
	var out TriggerResponse
	err := c.once(ctx, http.MethodPost, "/jobs/{jobid}/stop", "/jobs/"+url.PathEscape(jobID)+"/stop", nil, req, &out)
	return out.RequestID, err
}

// CancelJob is PATCH /jobs/{jobid}?mode=CANCEL. Cancelling is idempotent,
// but it is still sent once: the caller decides when to ask again.
func (c *Client) CancelJob(ctx context.Context, jobID string) error {
	// The schema enumerates CANCEL; Flink upper-cases the value anyway.
	q := url.Values{"mode": {"CANCEL"}}
	return c.once(ctx, http.MethodPatch, "/jobs/{jobid}", "/jobs/"+url.PathEscape(jobID), q, nil, nil)
}

// UploadJar is POST /jars/upload, a multipart upload of one jar. It returns
// the response and the jar ID for RunJar.
func (c *Client) UploadJar(ctx context.Context, fileName string, jar io.Reader) (*JarUploadResponse, string, error) {
	// The multipart body is written as it is sent: a jar is never held in
	// memory. The request has no RequestTimeout; ctx bounds it.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="jarfile"; filename=%q`, path.Base(fileName)))
		// Flink refuses the part without this type (the schema's note on /jars/upload).
		h.Set("Content-Type", "application/x-java-archive")
		part, err := mw.CreatePart(h)
		if err == nil {
			if _, err = io.Copy(part, jar); err != nil {
				err = fmt.Errorf("reading jar %s: %w", fileName, err)
			}
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	var out JarUploadResponse
	err := c.send(ctx, 0, http.MethodPost, "/jars/upload", "/jars/upload", mw.FormDataContentType(), pr, &out)
	pr.CloseWithError(err) // stops the writer when the request ended first
	if err != nil {
		return nil, "", err
	}
	return &out, path.Base(out.Filename), nil
}

// RunJar is POST /jars/{jarid}/run. It returns the new job's ID. Never
// retried: a retry could start the job twice.
//
// It waits up to JarRunTimeout, however short RequestTimeout is: Flink
// answers a jar run only once the job's main() has built and submitted the
// job and the job has initialized (JarRunHandler#handleRequest runs
// DetachedApplicationRunner#run, whose EmbeddedExecutor waits for the
// Dispatcher's acknowledgement and for the initialization), which a heavy
// main() makes longer than a REST read. Flink goes on with a run whose
// client gave up, and the caller, unsure whether it landed, would delete
// the jar under it.
func (c *Client) RunJar(ctx context.Context, jarID string, req JarRunRequest) (string, error) {
	var out JarRunResponse
	run := *c
	run.RequestTimeout = max(c.RequestTimeout, JarRunTimeout)
	err := run.once(ctx, http.MethodPost, "/jars/{jarid}/run", "/jars/"+url.PathEscape(jarID)+"/run", nil, req, &out)
	return out.JobID, err
}

// DeleteJar is DELETE /jars/{jarid}.
func (c *Client) DeleteJar(ctx context.Context, jarID string) error {
	return c.once(ctx, http.MethodDelete, "/jars/{jarid}", "/jars/"+url.PathEscape(jarID), nil, nil, nil)
}

// JobExceptions is GET /jobs/{jobid}/exceptions.
func (c *Client) JobExceptions(ctx context.Context, jobID string) (*JobExceptions, error) {
	var out JobExceptions
	return &out, c.get(ctx, "/jobs/{jobid}/exceptions", "/jobs/"+url.PathEscape(jobID)+"/exceptions", &out)
}

// TaskManagers is GET /taskmanagers.
func (c *Client) TaskManagers(ctx context.Context) (*TaskManagersInfo, error) {
	var out TaskManagersInfo
	return &out, c.get(ctx, "/taskmanagers", "/taskmanagers", &out)
}

// get sends an idempotent GET, retrying transient failures with
// exponential backoff.
func (c *Client) get(ctx context.Context, endpoint, p string, out any) error {
	backoff := c.RetryBackoff
	for attempt := 0; ; attempt++ {
		err := c.do(ctx, http.MethodGet, endpoint, p, "", nil, out)
		if err == nil || attempt >= c.MaxRetries || !retryable(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff *= 2
	}
}

func retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Unavailable() || e.StatusCode == http.StatusTooManyRequests || e.StatusCode == http.StatusInternalServerError
}

// once sends a non-idempotent request with a JSON body, exactly once.
func (c *Client) once(ctx context.Context, method, endpoint, p string, q url.Values, in, out any) error {
	var body []byte
	contentType := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding %s %s request: %w", method, endpoint, err)
		}
		body, contentType = b, "application/json"
	}
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return c.do(ctx, method, endpoint, p, contentType, body, out)
}

// do performs one attempt under RequestTimeout and decodes a 2xx body into
// out (when out is not nil).
func (c *Client) do(ctx context.Context, method, endpoint, p, contentType string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	return c.send(ctx, c.RequestTimeout, method, endpoint, p, contentType, rd, out)
}

// send is do with a streamed body and a timeout of its own (none when 0).
func (c *Client) send(ctx context.Context, timeout time.Duration, method, endpoint, p, contentType string, rd io.Reader, out any) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	ctx = withEndpoint(ctx, method, endpoint)
	u := c.baseURL + p
	fail := func(status int, msgs []string, err error) error {
		return &Error{Method: method, Endpoint: endpoint, URL: u, StatusCode: status, Messages: msgs, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fail(0, nil, err)
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fail(0, nil, err)
	}
	defer resp.Body.Close()
	// Bounded: a misbehaving endpoint must not exhaust the operator's memory.
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fail(resp.StatusCode, nil, fmt.Errorf("reading response: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var er ErrorResponse
		_ = json.Unmarshal(data, &er)
		return fail(resp.StatusCode, er.Errors, nil)
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fail(resp.StatusCode, nil, fmt.Errorf("decoding response: %w", err))
	}
	return nil
}
