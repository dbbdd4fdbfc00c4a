package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// progressMark follows the timestamp on the log lines that are virt-local's
// own progress; up shows those lines, and only those, on the terminal.
const progressMark = "virt-local: "

// newLogger is serve's logger. Every entry is one line of w, after a
// timestamp. The unnamed logger's Info entries at V(0) are virt-local's
// progress (local/cluster logs its steps there) and read as sentences
// after progressMark; the components log through named loggers, and their
// entries, like every error, are funcr's key=value lines, for the log file
// only.
func newLogger(w io.Writer, now func() time.Time) logr.Logger {
	return logr.New(&sink{Formatter: funcr.NewFormatter(funcr.Options{}), out: &lines{w: w, now: now}})
}

// lines writes whole lines, one writer at a time.
type lines struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

func (l *lines) write(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s %s\n", l.now().Format("15:04:05.000"), s)
}

// sink is newLogger's logr.LogSink.
type sink struct {
	funcr.Formatter
	out    *lines
	named  bool
	values []any // WithValues' pairs, for progress lines
}

func (s *sink) Info(level int, msg string, kv ...any) {
	if !s.named && level == 0 {
		s.out.write(progressMark + msg + pairs(s.values) + pairs(kv))
		return
	}
	prefix, args := s.FormatInfo(level, msg, kv)
	s.out.write(prefix + " " + args)
}

func (s *sink) Error(err error, msg string, kv ...any) {
	prefix, args := s.FormatError(err, msg, kv)
	s.out.write(prefix + " " + args)
}

func (s *sink) WithName(name string) logr.LogSink {
	c := *s
	c.AddName(name)
	c.named = true
	return &c
}

func (s *sink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.AddValues(kv)
	c.values = append(s.values[:len(s.values):len(s.values)], kv...)
	return &c
}

// pairs renders key-value pairs as " key=value", quoting values with
// spaces.
func pairs(kv []any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		v := fmt.Sprint(kv[i+1])
		if v == "" || strings.ContainsAny(v, " \t\n\"") {
			v = fmt.Sprintf("%q", v)
		}
		fmt.Fprintf(&b, " %v=%s", kv[i], v)
	}
	return b.String()
}

// progress returns a log line's progress sentence (what follows the
// timestamp and progressMark), if it is one.
func progress(line string) (string, bool) {
	_, rest, ok := strings.Cut(strings.TrimRight(line, "\n"), " ")
	if !ok || !strings.HasPrefix(rest, progressMark) {
		return "", false
	}
	return strings.TrimPrefix(rest, progressMark), true
}

// follower prints the progress lines a log file gains.
type follower struct {
	path string
	off  int64
}

func newFollower(path string, off int64) *follower { return &follower{path: path, off: off} }

func (f *follower) print(w io.Writer) {
	file, err := os.Open(f.path)
	if err != nil {
		return
	}
	defer file.Close()
	if _, err := file.Seek(f.off, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReader(file)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return // a partial line waits for the next call
		}
		f.off += int64(len(line))
		if p, ok := progress(line); ok {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
}

// tail returns the last n lines of a log file from offset off on.
func tail(path string, off int64, n int) []string {
	file, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer file.Close()
	if _, err := file.Seek(off, io.SeekStart); err != nil {
		return nil
	}
	var last []string
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		last = append(last, sc.Text())
		if len(last) > n {
			last = last[1:]
		}
	}
	return last
}
