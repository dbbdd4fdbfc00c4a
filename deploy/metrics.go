package deploy

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The metrics Service, KubeVirt's: a headless Service named
// MetricsServiceName selects every daemon pod labelled PrometheusLabel
// "true", and its endpoints are each pod's container port named
// MetricsPortName. A Prometheus ServiceMonitor written for KubeVirt's
// Service finds the same endpoints here, which serve /metrics over plain
// HTTP.
const (
	MetricsServiceName = "kubevirt-prometheus-metrics"
	PrometheusLabel    = "prometheus.kubevirt.io"
	MetricsPortName    = "metrics"
)

// MetricsObjects returns the metrics Service of the daemons in namespace.
func MetricsObjects(namespace string) ([]client.Object, error) {
	if namespace == "" {
		return nil, errors.New("deploy: metrics Service: namespace required")
	}
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: MetricsServiceName,
			Labels: map[string]string{Label: "virtkit", virtv1.AppLabel: "", PrometheusLabel: "true"}},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{PrometheusLabel: "true"},
			Ports: []corev1.ServicePort{{Name: MetricsPortName, Port: 443, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString(MetricsPortName)}},
		},
	}
	return []client.Object{svc}, nil
}

// metricsPort is a daemon container's port that the metrics Service
// selects.
func metricsPort(port int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: MetricsPortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}
}
