package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Names of virt-api's series.
const (
	// ConsoleConnectionsName, VNCConnectionsName and
	// PortForwardTunnelsName are KubeVirt's gauges of open console, VNC and
	// portforward streams, labelled namespace and vmi as KubeVirt's are.
	ConsoleConnectionsName = "kubevirt_console_active_connections"
	VNCConnectionsName     = "kubevirt_vnc_active_connections"
	PortForwardTunnelsName = "kubevirt_portforward_active_tunnels"
	// SubresourceRequestsName counts the calls of the
	// subresources.kubevirt.io API, labelled resource, subresource and
	// code. KubeVirt has no counter with that meaning, hence the prefix.
	SubresourceRequestsName = "virtkit_subresource_requests_total"
)

// Subresources is virt-api's series: the subresource calls by outcome and
// the open console and VNC streams per VMI. It implements
// subresources.Observer; give it to the server with subresources.WithObserver.
type Subresources struct {
	requests *prometheus.CounterVec
	streams  map[string]*prometheus.GaugeVec // by subresource: console, vnc, portforward
	mu       sync.Mutex
	open     map[streamKey]int
}

type streamKey struct{ subresource, namespace, name string }

// NewSubresources registers virt-api's series into reg.
func NewSubresources(reg prometheus.Registerer) (*Subresources, error) {
	streamLabels := []string{"namespace", "vmi"} // KubeVirt's
	s := &Subresources{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: SubresourceRequestsName,
			Help: "Calls of the subresources.kubevirt.io API, by resource, subresource and HTTP status code (101 for a stream that opened)."},
			[]string{"resource", "subresource", "code"}),
		streams: map[string]*prometheus.GaugeVec{
			"console": prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: ConsoleConnectionsName,
				Help: "Amount of active Console connections, broken down by namespace and vmi name."}, streamLabels),
			"vnc": prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: VNCConnectionsName,
				Help: "Amount of active VNC connections, broken down by namespace and vmi name."}, streamLabels),
			"portforward": prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: PortForwardTunnelsName,
				Help: "Amount of active portforward tunnels, broken down by namespace and vmi name."}, streamLabels),
		},
		open: map[streamKey]int{},
	}
	for _, c := range []prometheus.Collector{s.requests, s.streams["console"], s.streams["vnc"], s.streams["portforward"]} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Call counts one call of resource/subresource that ended with code.
func (s *Subresources) Call(resource, subresource string, code int) {
	s.requests.WithLabelValues(resource, subresource, strconv.Itoa(code)).Inc()
}

// Stream counts a console, VNC or portforward stream of namespace/name as open until
// the returned function is called. A VMI's series goes once its last
// stream closes, so that VMIs long gone leave no series behind.
func (s *Subresources) Stream(subresource, namespace, name string) (closed func()) {
	g, ok := s.streams[subresource]
	if !ok {
		return func() {}
	}
	k := streamKey{subresource, namespace, name}
	s.mu.Lock()
	s.open[k]++
	g.WithLabelValues(namespace, name).Set(float64(s.open[k]))
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.open[k]--
			if s.open[k] > 0 {
				g.WithLabelValues(namespace, name).Set(float64(s.open[k]))
				return
			}
			delete(s.open, k)
			g.DeleteLabelValues(namespace, name)
		})
	}
}
