package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/controllers/storageprofile"
	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/local/csidriver"
)

// copyClass is a StorageClass of virt-local's driver whose StorageProfile
// says copy: DataVolumes cloning into it are host-assisted, an importer
// pod copying the disk.
const copyClass = "local-copy"

// addCopyClass makes copyClass and waits for its profile to say copy.
func addCopyClass(ctx context.Context, c *localcluster.Cluster) error {
	sc := csidriver.StorageClass(copyClass, false)
	sc.Annotations = map[string]string{storageprofile.AnnCloneStrategy: "copy"}
	if err := c.Client.Create(ctx, sc); err != nil {
		return err
	}
	return benchkit.Wait(ctx, "StorageProfile "+copyClass+" says copy", 100*time.Millisecond, func() (bool, error) {
		sp := &cdiv1.StorageProfile{}
		err := c.Client.Get(ctx, client.ObjectKey{Name: copyClass}, sp)
		return err == nil && sp.Status.CloneStrategy != nil && *sp.Status.CloneStrategy == cdiv1.CloneStrategyHostAssisted, client.IgnoreNotFound(err)
	})
}

// clones times DataVolumes cloning claim, runs times each after one
// warm-up, alternating which goes first: into virt-local's default class
// (its profile says csi-clone: the driver copies the volume) and into
// copyClass (an importer pod copies disk.img). Each is timed from its
// creation to Succeeded, starting with a clean page cache, then deleted,
// and the next waits until only the source's volume is left.
func clones(ctx context.Context, c *localcluster.Cluster, claim string, mib uint, runs int) (csi, copied []time.Duration, err error) {
	clone := func(name, class string) (time.Duration, error) {
		dv := &cdiv1.DataVolume{}
		dv.Namespace, dv.Name = namespace, name
		dv.Spec.Source = &cdiv1.DataVolumeSource{PVC: &cdiv1.DataVolumeSourcePVC{Namespace: namespace, Name: claim}}
		dv.Spec.Storage = &cdiv1.StorageSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}
		if class != "" {
			dv.Spec.Storage.StorageClassName = &class
		}
		syscall.Sync()
		start := time.Now()
		if err := c.Client.Create(ctx, dv); err != nil {
			return 0, err
		}
		err := benchkit.Wait(ctx, "DataVolume "+name+" Succeeded", 50*time.Millisecond, func() (bool, error) {
			err := c.Client.Get(ctx, client.ObjectKeyFromObject(dv), dv)
			if err == nil && dv.Status.Phase == cdiv1.Failed {
				return false, fmt.Errorf("DataVolume %s failed: %+v", name, dv.Status.Conditions)
			}
			return err == nil && dv.Status.Phase == cdiv1.Succeeded, client.IgnoreNotFound(err)
		})
		took := time.Since(start)
		if err != nil {
			return 0, err
		}
		if err := c.Client.Delete(ctx, dv); err != nil {
			return 0, err
		}
		return took, waitFolders(ctx, c.DataDir, 1, 0)
	}
	for i := 0; i <= runs; i++ {
		var s, h time.Duration
		var err error
		if i%2 == 0 {
			if s, err = clone(fmt.Sprintf("%s-csi-%d", claim, i), ""); err == nil {
				h, err = clone(fmt.Sprintf("%s-copy-%d", claim, i), copyClass)
			}
		} else {
			if h, err = clone(fmt.Sprintf("%s-copy-%d", claim, i), copyClass); err == nil {
				s, err = clone(fmt.Sprintf("%s-csi-%d", claim, i), "")
			}
		}
		if err != nil {
			return nil, nil, err
		}
		label := "warm-up"
		if i > 0 {
			label = fmt.Sprintf("run %d", i)
			csi, copied = append(csi, s), append(copied, h)
		}
		fmt.Printf("%d MiB %s: DataVolume clone by the CSI driver %s, by an importer pod %s\n", mib, label, s.Round(time.Millisecond), h.Round(time.Millisecond))
	}
	return csi, copied, nil
}
