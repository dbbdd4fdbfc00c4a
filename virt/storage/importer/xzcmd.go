package importer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// maxXZStderr bounds what is kept of the xz program's complaints.
const maxXZStderr = 4 << 10

// xzProcess is the xz program decompressing in its own process, the
// compressed stream on its standard input: about twice the pure Go
// decoder's speed (docs/performance.md).
type xzProcess struct {
	cmd    *exec.Cmd
	out    io.ReadCloser
	stderr *bytes.Buffer
	waited bool
}

// startXZ runs `xz -dc` on in.
func startXZ(ctx context.Context, path string, in io.Reader) (*xzProcess, error) {
	cmd := exec.CommandContext(ctx, path, "-dc")
	cmd.Stdin = in
	p := &xzProcess{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = &limitedWriter{w: p.stderr, n: maxXZStderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCannotRun, path, err)
	}
	return p, nil
}

// Read implements io.Reader; at the end of the output it says how xz
// ended.
func (p *xzProcess) Read(b []byte) (int, error) {
	n, err := p.out.Read(b)
	if err == io.EOF && !p.waited {
		p.waited = true
		if werr := p.cmd.Wait(); werr != nil {
			return n, fmt.Errorf("xz: %v: %s", werr, strings.TrimSpace(p.stderr.String()))
		}
	}
	return n, err
}

// stop ends the process if it still runs.
func (p *xzProcess) stop() {
	if p.waited {
		return
	}
	p.waited = true
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(b[:min(room, len(b))])
	}
	return len(b), nil
}
