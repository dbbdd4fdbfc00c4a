package benchkit

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/metrics"
)

// Requests are requests to the apiserver: component -> "verb resource
// code" -> count.
type Requests map[string]map[string]float64

// GatherRequests reads kubevirt_rest_client_requests_total (counted in
// each in-process component's client) by component and "verb resource
// code".
func GatherRequests(g prometheus.Gatherer) (Requests, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := Requests{}
	for _, mf := range mfs {
		if mf.GetName() != metrics.ClientRequestsName {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := labels(m)
			if out[l["component"]] == nil {
				out[l["component"]] = map[string]float64{}
			}
			out[l["component"]][l["verb"]+" "+l["resource"]+" "+l["code"]] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

func labels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// Sub is what r counted since before.
func (r Requests) Sub(before Requests) Requests {
	out := Requests{}
	for comp, m := range r {
		for k, v := range m {
			if d := v - before[comp][k]; d > 0 {
				if out[comp] == nil {
					out[comp] = map[string]float64{}
				}
				out[comp][k] = d
			}
		}
	}
	return out
}

// Writes counts what KubeVirt's published writes-per-VMI figure counts:
// PATCH and UPDATE of VMIs and pods by virtkit's components, only those
// that wrote (2xx): a 409 conflict changed nothing.
func (r Requests) Writes() float64 {
	var w float64
	for _, comp := range []string{cluster.ComponentController, cluster.ComponentHandler, cluster.ComponentAPI} {
		for k, v := range r[comp] {
			f := strings.Fields(k) // verb, resource, code
			if len(f) != 3 {
				continue
			}
			base, _, _ := strings.Cut(f[1], "/")
			if (f[0] == "patch" || f[0] == "update") && (base == "virtualmachineinstances" || base == "pods") && strings.HasPrefix(f[2], "2") {
				w += v
			}
		}
	}
	return w
}
