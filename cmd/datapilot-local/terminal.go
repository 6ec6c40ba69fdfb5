package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// progressSink writes log lines for a person at a terminal: the time, the
// message, then key: value pairs, no JSON. Levels up to maxLevel are shown
// (the platform's steps are level 1).
type progressSink struct {
	mu       *sync.Mutex
	w        io.Writer
	name     string
	values   []any
	maxLevel int
	now      func() time.Time
}

func newProgressLogger(w io.Writer, maxLevel int) logr.Logger {
	return logr.New(&progressSink{mu: &sync.Mutex{}, w: w, maxLevel: maxLevel, now: time.Now})
}

func (s *progressSink) Init(logr.RuntimeInfo)  {}
func (s *progressSink) Enabled(level int) bool { return level <= s.maxLevel }

func (s *progressSink) Info(_ int, msg string, kv ...any) {
	s.write("", msg, kv)
}

func (s *progressSink) Error(err error, msg string, kv ...any) {
	s.write("error: ", msg, append([]any{"error", err}, kv...))
}

func (s *progressSink) write(prefix, msg string, kv []any) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s", s.now().Format("15:04:05"), prefix)
	if s.name != "" {
		b.WriteString(s.name + ": ")
	}
	b.WriteString(msg)
	all := append(append([]any{}, s.values...), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(&b, "%s%v: %v", sep, all[i], all[i+1])
	}
	if len(all) > 1 {
		b.WriteString(")")
	}
	b.WriteString("\n")
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, b.String())
}

func (s *progressSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any{}, s.values...), kv...)
	return &c
}

func (s *progressSink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "/" + name
	}
	c.name = name
	return &c
}

// followLogs streams every *.log file under dir to w, each line prefixed
// with the file's name, until ctx ends: `--verbose` shows the component,
// simulator and operator logs while they keep going to their files.
func followLogs(ctx context.Context, dir string, w io.Writer, every time.Duration) {
	offsets := map[string]int64{}
	partial := map[string][]byte{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		sort.Strings(files)
		for _, f := range files {
			offsets[f], partial[f] = copyNewLines(f, offsets[f], partial[f], w)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// copyNewLines writes the complete lines of path after offset to w, with
// the file's base name in front; an incomplete last line is kept for the
// next call.
func copyNewLines(path string, offset int64, rest []byte, w io.Writer) (int64, []byte) {
	f, err := os.Open(path)
	if err != nil {
		return offset, rest
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, rest
	}
	raw, err := io.ReadAll(f)
	if err != nil || len(raw) == 0 {
		return offset, rest
	}
	offset += int64(len(raw))
	buf := append(rest, raw...)
	last := bytes.LastIndexByte(buf, '\n')
	if last < 0 {
		return offset, buf
	}
	prefix := strings.TrimSuffix(filepath.Base(path), ".log")
	sc := bufio.NewScanner(bytes.NewReader(buf[:last+1]))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var out strings.Builder
	for sc.Scan() {
		fmt.Fprintf(&out, "[%s] %s\n", prefix, sc.Text())
	}
	io.WriteString(w, out.String())
	return offset, append([]byte(nil), buf[last+1:]...)
}
