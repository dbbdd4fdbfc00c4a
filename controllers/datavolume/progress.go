package datavolume

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage/importer/contract"
)

// ProgressReader reads how far an importer pod has got, in percent; ok is
// false when it reports nothing yet.
type ProgressReader interface {
	Progress(ctx context.Context, pod *corev1.Pod, ownerUID string) (percent float64, ok bool, err error)
}

// HTTPProgress reads contract.ProgressMetric from the importer's metrics
// endpoint on the pod's IP, as CDI's controller does.
type HTTPProgress struct {
	// Client is the HTTP client; the default gives up after 2 s.
	Client *http.Client
}

// maxMetrics bounds what is read of an importer's metrics page.
const maxMetrics = 64 << 10

// Progress implements ProgressReader.
func (h HTTPProgress) Progress(ctx context.Context, pod *corev1.Pod, ownerUID string) (float64, bool, error) {
	if pod.Status.PodIP == "" {
		return 0, false, nil
	}
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: 2 * time.Second}
	}
	u := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(contract.ProgressPort)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, false, fmt.Errorf("importer progress of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("importer progress of pod %s/%s: %s", pod.Namespace, pod.Name, resp.Status)
	}
	v, ok := ParseProgress(io.LimitReader(resp.Body, maxMetrics), ownerUID)
	return v, ok, nil
}

// ParseProgress finds contract.ProgressMetric for ownerUID in a
// Prometheus text page.
func ParseProgress(r io.Reader, ownerUID string) (float64, bool) {
	label := `ownerUID="` + ownerUID + `"`
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, contract.ProgressMetric+"{") || !strings.Contains(line, label) {
			continue
		}
		fields := strings.Fields(line[strings.LastIndexByte(line, '}')+1:])
		if len(fields) == 0 {
			continue
		}
		f, err := strconv.ParseFloat(fields[0], 64)
		if err == nil && f >= 0 && f <= 100 {
			return f, true
		}
	}
	return 0, false
}
