package storagetest

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/virtkit/virtkit/virt/storage"
)

// suite is the state the steps share.
type suite struct {
	tg  Target
	vmi *virtv1.VirtualMachineInstance
	pod storage.Pod
	// before is what the pod held before the first Prepare.
	before []string
	first  storage.Plan // the first start's plan
	second storage.Plan // the restarted launcher's plan
}

type step struct {
	name string
	run  func(s *suite, t *testing.T)
}

// Run runs the contract against the Target newTarget returns. Steps run in
// order on one pod; a failed step ends the run.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	tg := newTarget(t)
	s := &suite{tg: tg, vmi: VMI()}
	s.pod = tg.Pod(t, s.vmi)
	for _, st := range []step{
		{"plan", (*suite).stepPlan},
		{"prepare", (*suite).stepPrepare},
		{"plan-again", (*suite).stepPlanAgain},
		{"prepare-all-or-nothing", (*suite).stepPrepareAllOrNothing},
		{"release", (*suite).stepRelease},
		{"bad-input", (*suite).stepBadInput},
		{"cancelled", (*suite).stepCancelled},
	} {
		if !t.Run(st.name, func(t *testing.T) { st.run(s, t) }) {
			t.Fatalf("step %q failed; the later steps build on it", st.name)
		}
	}
}

// VMI is the suite's VMI: a claim ("data"), a container disk ("root", the
// second volume), an emptyDisk ("scratch"), cloud-init NoCloud data ("ci"),
// and a volume no disk uses ("unused"). A Target's Pod lays out the claim's
// mount and the container disk's image for it.
func VMI() *virtv1.VirtualMachineInstance {
	vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "uid-1"}}
	vmi.Spec.Volumes = []virtv1.Volume{
		{Name: "data", VolumeSource: virtv1.VolumeSource{PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-claim"}}}},
		{Name: "root", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/disk"}}},
		{Name: "scratch", VolumeSource: virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{Capacity: resource.MustParse("32Mi")}}},
		{Name: "ci", VolumeSource: virtv1.VolumeSource{CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#!/bin/sh\necho hi\n"}}},
		{Name: "unused", VolumeSource: virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{Capacity: resource.MustParse("1Mi")}}},
	}
	for _, n := range []string{"data", "root", "scratch", "ci"} {
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: n})
	}
	return vmi
}

// planned is what the suite expects of each volume's plan.
type planned struct {
	Kind     storage.Kind
	Format   storage.Format
	ReadOnly bool
	Create   bool
}

func summary(plan storage.Plan) map[string]planned {
	out := map[string]planned{}
	for n, p := range plan {
		out[n] = planned{Kind: p.Kind, Format: p.Format, ReadOnly: p.ReadOnly, Create: p.Create}
	}
	return out
}

func (s *suite) stepPlan(t *testing.T) {
	s.before = s.tg.InPlace(t)
	plan, err := s.tg.Storage.Plan(context.Background(), s.vmi, s.pod)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	want := map[string]planned{
		"data":    {Kind: storage.KindPersistentVolumeClaim, Format: storage.FormatRaw, Create: true},
		"root":    {Kind: storage.KindContainerDisk, Format: storage.FormatQCOW2, Create: true},
		"scratch": {Kind: storage.KindEmptyDisk, Format: storage.FormatQCOW2, Create: true},
		"ci":      {Kind: storage.KindCloudInitNoCloud, Format: storage.FormatRaw, ReadOnly: true, Create: true},
	}
	if diff := cmp.Diff(want, summary(plan)); diff != "" {
		t.Errorf("first plan (-want +got):\n%s", diff)
	}
	paths := map[string]string{}
	for n, p := range plan {
		if p.Volume != n || p.Path == "" || p.Source != storage.SourceFile {
			t.Errorf("plan of %s: volume %q, path %q, source %q; want its own name, a path, a file", n, p.Volume, p.Path, p.Source)
		}
		if other, dup := paths[p.Path]; dup {
			t.Errorf("volumes %s and %s share the path %s", n, other, p.Path)
		}
		paths[p.Path] = n
	}
	if diff := cmp.Diff(s.before, s.tg.InPlace(t)); diff != "" {
		t.Errorf("Plan changed the pod (-before +after):\n%s", diff)
	}
	s.first = plan
}

func (s *suite) stepPrepare(t *testing.T) {
	if err := s.tg.Storage.Prepare(context.Background(), s.vmi, s.pod, s.first); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	for n, p := range s.first {
		if !s.tg.Exists(t, p.Path) {
			t.Errorf("after Prepare, the image of %s (%s) is not in place", n, p.Path)
		}
	}
}

// A restarted launcher in the same pod plans again: the claim's image and
// the emptyDisk are kept (they hold the guest's data), overlays and ISOs
// are made afresh.
func (s *suite) stepPlanAgain(t *testing.T) {
	plan, err := s.tg.Storage.Plan(context.Background(), s.vmi, s.pod)
	if err != nil {
		t.Fatalf("Plan again: %v", err)
	}
	got := map[string]bool{}
	for n, p := range plan {
		got[n] = p.Create
		if p.Path != s.first[n].Path {
			t.Errorf("plan again of %s: path %s, first %s", n, p.Path, s.first[n].Path)
		}
	}
	if diff := cmp.Diff(map[string]bool{"data": false, "scratch": false, "root": true, "ci": true}, got); diff != "" {
		t.Errorf("Create in the second plan (-want +got):\n%s", diff)
	}
	if err := s.tg.Storage.Prepare(context.Background(), s.vmi, s.pod, plan); err != nil {
		t.Fatalf("Prepare again: %v", err)
	}
	s.second = plan
}

// A Prepare that fails on one volume names it and changes nothing.
func (s *suite) stepPrepareAllOrNothing(t *testing.T) {
	before := s.tg.InPlace(t)
	plan := storage.Plan{}
	for n, p := range s.second {
		plan[n] = p
	}
	// Last by name, so the others were staged when it fails.
	plan["zzz"] = storage.DiskPlan{Volume: "zzz", Kind: "bogus", Create: true,
		Path: filepath.Join(filepath.Dir(s.second["scratch"].Path), "zzz.img")}
	err := s.tg.Storage.Prepare(context.Background(), s.vmi, s.pod, plan)
	var ve *storage.VolumeError
	if !errors.As(err, &ve) || ve.Volume != "zzz" {
		t.Errorf("Prepare with an image of unknown kind: %v; want a *storage.VolumeError naming zzz", err)
	}
	if diff := cmp.Diff(before, s.tg.InPlace(t)); diff != "" {
		t.Errorf("a failed Prepare changed the pod (-before +after):\n%s", diff)
	}
}

// Release removes every image that lives only as long as the VMI and keeps
// the claim's; a second Release is fine.
func (s *suite) stepRelease(t *testing.T) {
	ctx := context.Background()
	if err := s.tg.Storage.Release(ctx, s.second); err != nil {
		t.Fatalf("Release: %v", err)
	}
	for n, p := range s.second {
		if got := s.tg.Exists(t, p.Path); got == p.Discardable() {
			t.Errorf("after Release, %s (%s) in place=%v; want %v", n, p.Path, got, !p.Discardable())
		}
	}
	want := slices.Clone(s.before)
	want = append(want, s.first["data"].Path)
	slices.Sort(want)
	if diff := cmp.Diff(want, s.tg.InPlace(t)); diff != "" {
		t.Errorf("after Release, the pod holds more than before plus the claim's image (-want +got):\n%s", diff)
	}
	if err := s.tg.Storage.Release(ctx, s.second); err != nil {
		t.Errorf("a second Release: %v", err)
	}
}

// Bad input fails Plan with a *storage.VolumeError per volume, each naming
// it and its field, all reported together; nothing is written.
func (s *suite) stepBadInput(t *testing.T) {
	before := s.tg.InPlace(t)
	vmi := VMI()
	vmi.Spec.Volumes = append(vmi.Spec.Volumes,
		virtv1.Volume{Name: "metrics", VolumeSource: virtv1.VolumeSource{DownwardMetrics: &virtv1.DownwardMetricsVolumeSource{}}},
		virtv1.Volume{Name: "zero", VolumeSource: virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{}}},
		virtv1.Volume{Name: "absent", VolumeSource: virtv1.VolumeSource{ContainerDisk: &virtv1.ContainerDiskSource{Image: "example/absent"}}},
	)
	for _, n := range []string{"nodisk", "metrics", "zero", "absent"} {
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: n})
	}
	want := map[string]error{"nodisk": storage.ErrInvalid, "metrics": storage.ErrUnsupported, "zero": storage.ErrInvalid}
	if s.tg.Caps.ReadsFiles {
		want["absent"] = storage.ErrNotFound
	}
	_, err := s.tg.Storage.Plan(context.Background(), vmi, s.pod)
	if err == nil {
		t.Fatalf("Plan of bad volumes succeeded")
	}
	got := map[string]error{}
	for _, e := range flatten(err) {
		var ve *storage.VolumeError
		if !errors.As(e, &ve) {
			t.Errorf("Plan: %v is not a *storage.VolumeError", e)
			continue
		}
		if ve.Field == "" {
			t.Errorf("Plan: %v names no field", e)
		}
		if !strings.Contains(e.Error(), `"`+ve.Volume+`"`) {
			t.Errorf("Plan: %q does not name the volume %s", e, ve.Volume)
		}
		got[ve.Volume] = ve.Err
	}
	for n, sentinel := range want {
		if !errors.Is(got[n], sentinel) {
			t.Errorf("Plan: volume %s failed with %v, want %v; all: %v", n, got[n], sentinel, err)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("Plan: volume %s failed, want it planned: %v", n, got[n])
		}
	}
	if diff := cmp.Diff(before, s.tg.InPlace(t)); diff != "" {
		t.Errorf("a failed Plan changed the pod (-before +after):\n%s", diff)
	}
}

// A cancelled context stops Plan and Prepare, which then changes nothing.
func (s *suite) stepCancelled(t *testing.T) {
	before := s.tg.InPlace(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.tg.Storage.Plan(ctx, s.vmi, s.pod); !errors.Is(err, context.Canceled) {
		t.Errorf("Plan with a cancelled context: %v, want context.Canceled", err)
	}
	if err := s.tg.Storage.Prepare(ctx, s.vmi, s.pod, s.second); !errors.Is(err, context.Canceled) {
		t.Errorf("Prepare with a cancelled context: %v, want context.Canceled", err)
	}
	if diff := cmp.Diff(before, s.tg.InPlace(t)); diff != "" {
		t.Errorf("a cancelled Prepare changed the pod (-before +after):\n%s", diff)
	}
}

// flatten returns the errors errors.Join put together, or err alone.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
