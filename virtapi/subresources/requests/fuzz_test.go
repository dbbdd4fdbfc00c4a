package requests

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
)

// FuzzBodies feeds arbitrary bodies to the decoding of every subresource
// that reads one, as the verbs do. Whatever the body, a refusal is a 400
// that virtctl shows, never another status; an accepted dry run is exactly
// [All]; an accepted addvolume names its volume and disk alike and marks
// its one source hotpluggable; an accepted removevolume names its volume;
// nothing over the body bound is accepted. Run with
//
//	go test ./virtapi/subresources/requests/ -run '^$' -fuzz FuzzBodies -fuzztime 60s
func FuzzBodies(f *testing.F) {
	for i, b := range []string{
		`{}`, `{"paused":true,"dryRun":["All"]}`, `{"gracePeriod":0}`, `{"gracePeriodSeconds":-1}`,
		`{"addedNodeSelector":{"kubernetes.io/hostname":"node-b"}}`, `{"dryRun":["All","All"]}`, `{}`,
		`{"name":"data","disk":{"disk":{"bus":"scsi"}},"volumeSource":{"persistentVolumeClaim":{"claimName":"data"}}}`,
		`{"name":"data"}`,
		"name: data\ndisk:\n  disk: {}\nvolumeSource:\n  dataVolume:\n    name: dv\n",
		`{"name":"data","disk":{},"volumeSource":{"persistentVolumeClaim":{"claimName":"d"},"dataVolume":{"name":"dv"}}}`,
	} {
		f.Add(uint8(i), []byte(b))
	}
	f.Add(uint8(7), bytes.Repeat([]byte(" "), MaxBody+2))
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		r := httptest.NewRequest(http.MethodPut, "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachines/vm1/x", bytes.NewReader(body))
		w := httptest.NewRecorder()
		var (
			start   virtv1.StartOptions
			stop    virtv1.StopOptions
			restart virtv1.RestartOptions
			migrate virtv1.MigrateOptions
			pause   virtv1.PauseOptions
			unpause virtv1.UnpauseOptions
		)
		verbs := []struct {
			opts any
			dry  *[]string
			what string
		}{
			{&start, &start.DryRun, "v1.StartOptions"}, {&stop, &stop.DryRun, "v1.StopOptions"},
			{&restart, &restart.DryRun, "v1.RestartOptions"}, {&migrate, &migrate.DryRun, "v1.MigrateOptions"},
			{&pause, &pause.DryRun, "v1.PauseOptions"}, {&unpause, &unpause.DryRun, "v1.UnpauseOptions"},
		}
		var (
			dry     bool
			err     error
			dryList []string
		)
		if k := int(kind % 9); k < len(verbs) {
			v := verbs[k]
			dry, err = DecodeDry(w, r, v.opts, v.dry, v.what, "{}")
			dryList = *v.dry
		} else {
			var vr Volume
			vr, dry, err = DecodeVolume(w, r, k != 8)
			if err == nil {
				dryList = checkVolumeRequest(t, vr)
			}
		}
		if err != nil {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("refused with %v, want a 400", err)
			}
			return
		}
		if len(body) > MaxBody {
			t.Fatalf("accepted a %d-byte body", len(body))
		}
		if dry != (len(dryList) > 0) || (dry && !slices.Equal(dryList, []string{metav1.DryRunAll})) {
			t.Errorf("dry run %t from dryRun %q", dry, dryList)
		}
	})
}

// checkVolumeRequest checks an accepted volume request and returns its
// dryRun list.
func checkVolumeRequest(t *testing.T, vr Volume) []string {
	t.Helper()
	if (vr.Add == nil) == (vr.Remove == nil) {
		t.Fatalf("volume request with add %v and remove %v", vr.Add, vr.Remove)
	}
	if vr.Remove != nil {
		if vr.Remove.Name == "" {
			t.Error("removevolume accepted without a name")
		}
		return vr.Remove.DryRun
	}
	o := vr.Add
	if o.Name == "" || o.Disk == nil || o.Disk.Name != o.Name || o.VolumeSource == nil {
		t.Fatalf("addvolume accepted as %+v", o)
	}
	pvc, dv := o.VolumeSource.PersistentVolumeClaim, o.VolumeSource.DataVolume
	switch {
	case dv != nil && !dv.Hotpluggable, dv == nil && (pvc == nil || !pvc.Hotpluggable):
		t.Errorf("addvolume source not marked hotpluggable: %+v", o.VolumeSource)
	}
	return o.DryRun
}
