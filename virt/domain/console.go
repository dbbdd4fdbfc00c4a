package domain

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// WaitConsoleLine reads lines from a console (as Manager.Console returns)
// until one matches re, and returns it without its line ending. A console
// read cannot be interrupted other than by closing it, so when ctx ends first
// WaitConsoleLine closes c and returns ctx's error; otherwise c stays open
// and positioned after the matching line (with up to a buffer's worth of
// following output consumed).
func WaitConsoleLine(ctx context.Context, c io.ReadWriteCloser, re *regexp.Regexp) (string, error) {
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		r := bufio.NewReader(c)
		for {
			s, err := r.ReadString('\n')
			if line := strings.TrimRight(s, "\r\n"); line != "" && re.MatchString(line) {
				done <- result{line: line}
				return
			}
			if err != nil {
				done <- result{err: err}
				return
			}
		}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return "", fmt.Errorf("console: no line matching %q: %w", re, res.err)
		}
		return res.line, nil
	case <-ctx.Done():
		c.Close() // ends the reader goroutine's pending read
		return "", fmt.Errorf("console: no line matching %q: %w", re, ctx.Err())
	}
}
