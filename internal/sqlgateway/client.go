// Package sqlgateway is a client of Flink's SQL Gateway REST API (version
// v2, served by every Flink minor from 1.17): it opens a session,
// configures it, executes a script's statements one by one and reads the
// job ID from the result of its INSERT, or has the script planned
// (EXPLAIN) without running it.
package sqlgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// apiVersion is the REST API version the client speaks: V2 has every
// operation it needs (rowFormat on results, jobID in an INSERT's result)
// on every supported minor (SqlGatewayRestAPIVersion).
const apiVersion = "/v2"

// Client talks to one SQL Gateway.
type Client struct {
	baseURL string
	http    *http.Client
	// Poll is the wait between two fetches of a result that is not ready.
	Poll time.Duration
	// RequestTimeout bounds each request.
	RequestTimeout time.Duration
}

// New returns a client of the gateway at baseURL, such as
// http://10.0.0.7:8083. A nil httpClient is http.DefaultClient.
func New(baseURL string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{baseURL: strings.TrimRight(baseURL, "/"), http: httpClient, Poll: 200 * time.Millisecond, RequestTimeout: 10 * time.Second}
}

// Error is a failed request: the HTTP status (0 when none arrived) and
// the gateway's error messages.
type Error struct {
	Op         string
	StatusCode int
	Messages   []string
	Err        error
}

func (e *Error) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("SQL Gateway %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("SQL Gateway %s: HTTP %d: %s", e.Op, e.StatusCode, strings.Join(e.Messages, "; "))
}

func (e *Error) Unwrap() error { return e.Err }

// StatementError is a statement Flink refused: it did not parse, plan or
// submit. Message is Flink's own (the root cause of the gateway's trace).
type StatementError struct {
	// Index is the statement's place in the script, from 0.
	Index   int
	Message string
}

func (e *StatementError) Error() string {
	return fmt.Sprintf("Flink refused statement %d of the script: %s", e.Index+1, e.Message)
}

// IsRefused reports whether err is Flink refusing a statement, not the
// gateway being unreachable.
func IsRefused(err error) bool {
	var s *StatementError
	return errors.As(err, &s)
}

func (c *Client) do(ctx context.Context, op, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, c.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, body)
	if err != nil {
		return &Error{Op: op, Err: err}
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &Error{Op: op, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return &Error{Op: op, Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Op: op, StatusCode: resp.StatusCode}
		var er struct {
			Errors []string `json:"errors"`
		}
		if json.Unmarshal(raw, &er) == nil {
			e.Messages = er.Errors
		}
		return e
	}
	if out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &Error{Op: op, StatusCode: resp.StatusCode, Err: fmt.Errorf("decoding %s: %w", raw, err)}
	}
	return nil
}

// Session is one open gateway session.
type Session struct {
	c      *Client
	handle string
}

// Open opens a session with the given properties over the gateway's
// configuration.
func (c *Client) Open(ctx context.Context, props map[string]string) (*Session, error) {
	if props == nil {
		props = map[string]string{}
	}
	var out struct {
		SessionHandle string `json:"sessionHandle"`
	}
	if err := c.do(ctx, "openSession", http.MethodPost, apiVersion+"/sessions", map[string]any{"properties": props, "sessionName": "datapilot"}, &out); err != nil {
		return nil, err
	}
	if out.SessionHandle == "" {
		return nil, &Error{Op: "openSession", StatusCode: http.StatusOK, Err: errors.New("no session handle in the answer")}
	}
	return &Session{c: c, handle: out.SessionHandle}, nil
}

// Close closes the session; a session the gateway no longer has is closed.
func (s *Session) Close(ctx context.Context) error {
	return s.c.do(ctx, "closeSession", http.MethodDelete, apiVersion+"/sessions/"+url.PathEscape(s.handle), nil, nil)
}

// Result is what a statement returned.
type Result struct {
	// JobID is the job an INSERT or statement set submitted.
	JobID string
	// Rows are the result's rows, each field as JSON gave it.
	Rows [][]any
}

type fetchBody struct {
	ResultType    string `json:"resultType"`
	JobID         string `json:"jobID"`
	NextResultURI string `json:"nextResultUri"`
	Results       struct {
		Data []struct {
			Fields []any `json:"fields"`
		} `json:"data"`
	} `json:"results"`
}

// Execute runs one statement and waits for its result (the first page:
// enough for the statements a job script has). index is the statement's
// place in the script, for the error.
func (s *Session) Execute(ctx context.Context, index int, statement string) (*Result, error) {
	var op struct {
		OperationHandle string `json:"operationHandle"`
	}
	base := apiVersion + "/sessions/" + url.PathEscape(s.handle)
	if err := s.c.do(ctx, "executeStatement", http.MethodPost, base+"/statements", map[string]any{"statement": statement}, &op); err != nil {
		return nil, err
	}
	opPath := base + "/operations/" + url.PathEscape(op.OperationHandle)
	defer func() {
		_ = s.c.do(context.WithoutCancel(ctx), "closeOperation", http.MethodDelete, opPath+"/close", nil, nil)
	}()
	for {
		var res fetchBody
		err := s.c.do(ctx, "fetchResults", http.MethodGet, opPath+"/result/0?rowFormat=JSON", nil, &res)
		var ge *Error
		if errors.As(err, &ge) && ge.StatusCode == http.StatusInternalServerError {
			// The operation failed: its trace is the refusal.
			return nil, &StatementError{Index: index, Message: RootCause(ge.Messages)}
		}
		if err != nil {
			return nil, err
		}
		if res.ResultType != "NOT_READY" {
			out := &Result{JobID: res.JobID}
			for _, d := range res.Results.Data {
				out.Rows = append(out.Rows, d.Fields)
			}
			return out, nil
		}
		t := time.NewTimer(s.c.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &Error{Op: "fetchResults", Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// RootCause is the innermost "Caused by:" of a gateway error's trace
// (ErrorResponseBody: "Internal server error." and the trace in angle
// brackets), without the stack frames: the parser's or the planner's own
// message.
func RootCause(messages []string) string {
	trace := strings.Join(messages, "\n")
	if len(messages) > 1 {
		trace = messages[len(messages)-1]
	}
	trace = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(trace), "<"), ">")
	if i := strings.LastIndex(trace, "Caused by: "); i >= 0 {
		trace = trace[i+len("Caused by: "):]
	}
	var lines []string
	for _, l := range strings.Split(trace, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "at ") || strings.HasPrefix(strings.TrimSpace(l), "... ") {
			break
		}
		lines = append(lines, l)
	}
	msg := strings.TrimSpace(strings.Join(lines, "\n"))
	if len(msg) > 2048 {
		msg = msg[:2048] + "..."
	}
	return msg
}

// Submit runs a script in a new session: every statement in order; the
// job ID is the one the last statement (its INSERT or statement set)
// submitted. props configure the session before the first statement.
func (c *Client) Submit(ctx context.Context, props map[string]string, statements []string) (string, error) {
	res, err := c.run(ctx, props, statements)
	if err != nil {
		return "", err
	}
	if res.JobID == "" {
		return "", &StatementError{Index: len(statements) - 1, Message: "the script's last statement submitted no job: it must be an INSERT INTO or an EXECUTE STATEMENT SET"}
	}
	return res.JobID, nil
}

// Explain plans a script without running it: its statements but the last
// in a new session, then EXPLAIN of the last. It returns the plan.
func (c *Client) Explain(ctx context.Context, props map[string]string, statements []string) (string, error) {
	if len(statements) == 0 {
		return "", &StatementError{Message: "the script has no statement"}
	}
	last := len(statements) - 1
	stmts := append(append([]string{}, statements[:last]...), "EXPLAIN "+statements[last])
	res, err := c.run(ctx, props, stmts)
	if err != nil {
		return "", err
	}
	if len(res.Rows) == 0 || len(res.Rows[0]) == 0 {
		return "", nil
	}
	return fmt.Sprint(res.Rows[0][0]), nil
}

func (c *Client) run(ctx context.Context, props map[string]string, statements []string) (*Result, error) {
	s, err := c.Open(ctx, props)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close(context.WithoutCancel(ctx)) }()
	var res *Result
	for i, st := range statements {
		if res, err = s.Execute(ctx, i, st); err != nil {
			return nil, err
		}
	}
	if res == nil {
		return nil, &StatementError{Message: "the script has no statement"}
	}
	return res, nil
}
