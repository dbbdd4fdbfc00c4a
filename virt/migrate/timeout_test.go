package migrate_test

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/migrate"
)

func TestDataSize(t *testing.T) {
	vmi := func(request, guest string) *virtv1.VirtualMachineInstance {
		v := &virtv1.VirtualMachineInstance{}
		if request != "" {
			v.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: *quantity(request)}
		}
		if guest != "" {
			v.Spec.Domain.Memory = &virtv1.Memory{Guest: quantity(guest)}
		}
		return v
	}
	for _, tc := range []struct {
		name      string
		vmi       *virtv1.VirtualMachineInstance
		localDisk int64
		want      int64
	}{
		{"requested memory", vmi("2Gi", ""), 0, 2 << 30},
		{"guest memory wins over the request", vmi("2Gi", "1Gi"), 0, 1 << 30},
		{"guest memory alone", vmi("", "512Mi"), 0, 512 << 20},
		{"plus the local disks copied along", vmi("1Gi", ""), 300 << 20, 1<<30 + 300<<20},
		{"no memory", vmi("", ""), 0, 0},
		{"no VMI", nil, 5, 5},
		{"a negative disk size counts as none", vmi("1Gi", ""), -1, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, migrate.DataSize(tc.vmi, tc.localDisk), tc.want)
		})
	}
}

func TestCompletionTimeout(t *testing.T) {
	perGiB := migrate.Config{CompletionTimeoutPerGiB: 150 * time.Second}
	for _, tc := range []struct {
		name string
		cfg  migrate.Config
		data int64
		want time.Duration
	}{
		// KubeVirt counts started units of 10^9 bytes.
		{"256 MiB counts as one unit", perGiB, 256 << 20, 150 * time.Second},
		{"exactly 1 GB", perGiB, 1_000_000_000, 150 * time.Second},
		{"one byte more starts a second unit", perGiB, 1_000_000_001, 300 * time.Second},
		{"1 GiB is more than 1 GB", perGiB, 1 << 30, 300 * time.Second},
		{"2 GiB", perGiB, 2 << 30, 450 * time.Second},
		{"no data, no timeout", perGiB, 0, 0},
		{"no setting, no timeout", migrate.Config{}, 1 << 30, 0},
		{"sub-second settings scale too", migrate.Config{CompletionTimeoutPerGiB: 500 * time.Millisecond}, 3_500_000_000, 2 * time.Second},
		{"huge products saturate", migrate.Config{CompletionTimeoutPerGiB: time.Duration(1 << 62)}, 8_000_000_000, time.Duration(1<<63 - 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.cfg.CompletionTimeout(tc.data), tc.want)
		})
	}
}

func TestBandwidthMiB(t *testing.T) {
	for _, tc := range []struct {
		bytes int64
		want  uint64
	}{
		{0, 0},
		{-5, 0},
		{1, 1},             // any limit is at least 1 MiB/s
		{1 << 20, 1},       // 1Mi
		{1_000_000, 1},     // 1M rounds to the nearest MiB
		{3<<20 - 1<<19, 3}, // 2.5 MiB rounds up
		{3<<20 - 1<<19 - 1, 2},
		{217 << 10, 1},  // the user guide's 217Ki
		{1 << 30, 1024}, // 1Gi
	} {
		assert.Equal(t, migrate.Config{BandwidthPerMigration: tc.bytes}.BandwidthMiB(), tc.want, "bandwidth %d bytes/s", tc.bytes)
	}
}
