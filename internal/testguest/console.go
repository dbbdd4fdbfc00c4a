package testguest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// WaitLine follows the console log at path (which may not exist yet) until a
// line matches re, and returns that line.
func WaitLine(ctx context.Context, path string, re *regexp.Regexp) (string, error) {
	var offset int64
	var partial string
	for {
		line, n, rest, err := scan(path, offset, partial, re)
		offset += n
		partial = rest
		if err == nil && line != "" {
			return line, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("console %s: no line matching %q: %w", path, re, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// scan reads path from offset and returns the first matching line, how many
// bytes it consumed and the unterminated rest.
func scan(path string, offset int64, partial string, re *regexp.Regexp) (string, int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, partial, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "", 0, partial, err
	}
	r := bufio.NewReader(f)
	var n int64
	for {
		s, err := r.ReadString('\n')
		n += int64(len(s))
		if err != nil {
			return "", n, partial + s, nil
		}
		line := strings.TrimRight(partial+s, "\r\n")
		partial = ""
		if re.MatchString(line) {
			return line, n, "", nil
		}
	}
}

// Tail returns the last n lines of the file at path, for error messages.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
