package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StartStagesName is the histogram [StartStages] exports (virtkit's own;
// KubeVirt has no per-stage figure of a start). Its one label, stage, is a
// handler stage (controllers/handler.StageLauncherReady, StageConnect,
// StageReport) or a start-up step's name (virt.StepDefine, ...).
const StartStagesName = "virtkit_handler_vmi_start_stage_seconds"

// StartStages is virt-handler's histogram of how long each stage of a
// guest's start took: a controllers/handler.StartObserver.
type StartStages struct {
	vec *prometheus.HistogramVec
}

// NewStartStages registers the histogram into reg. Its buckets run from
// 1 ms to 2 minutes, about 1.6 times apart.
func NewStartStages(reg prometheus.Registerer) (*StartStages, error) {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    StartStagesName,
		Help:    "How long each stage of a VMI's start on the node took, in seconds.",
		Buckets: prometheus.ExponentialBucketsRange(0.001, 120, 26),
	}, []string{"stage"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	return &StartStages{vec: vec}, nil
}

// ObserveStart records one stage's duration.
func (s *StartStages) ObserveStart(stage string, took time.Duration) {
	s.vec.WithLabelValues(stage).Observe(took.Seconds())
}
