// Command install measures installing and upgrading virtkit through
// virt-operator on virt-local's real kubelet node (`make bench-install`):
//
//   - install: from the KubeVirt CR's creation to its Available condition
//     (the operator already running, the daemons' images in the cluster's
//     registry but not yet on the node: their pulls count, as on a fresh
//     cluster);
//   - upgrade: with one VMI running, from setting the CR's spec.imageTag to
//     the same images pushed under a second tag, to the CR Available with
//     that version observed (every daemon rolled; the VMI keeps running and
//     is not moved: no workload update method);
//   - the operator while idle, after the upgrade: its resident memory and
//     its CPU time over -idle.
//
// It ends with one line:
//
//	install_s=<n> upgrade_s=<n> operator_rss_mib=<n>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy"
	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/local/cluster"
)

type options struct {
	repo    string
	idle    time.Duration
	verbose bool
}

func main() {
	var o options
	flag.StringVar(&o.repo, "repo", "../..", "checkout root (_output holds the binaries, images and test guest); the default fits a run from hack/bench")
	flag.DurationVar(&o.idle, "idle", 30*time.Second, "how long the idle operator's CPU time is read over")
	flag.BoolVar(&o.verbose, "v", false, "virt-local's components' logs")
	flag.Parse()
	sum, err := run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-install:", err)
		os.Exit(1)
	}
	fmt.Println(sum)
}

// summary is the closing line's figures.
type summary struct {
	installS, upgradeS, operatorRSSMiB float64
}

func (s summary) String() string {
	return fmt.Sprintf("install_s=%.1f upgrade_s=%.1f operator_rss_mib=%.1f", s.installS, s.upgradeS, s.operatorRSSMiB)
}

// upgradeTag is the second tag the images are pushed under.
const upgradeTag = "upgrade"

func run(ctx context.Context, o options) (_ summary, err error) {
	root, err := filepath.Abs(o.repo)
	if err != nil {
		return summary{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	real := fmt.Sprintf("bench-%d-kubelet", os.Getpid())
	c, err := localcluster.Start(ctx, localcluster.Options{Repo: root, KubeletNode: real, Operator: true,
		DataPrefix: "vki-", Logger: benchkit.ProgressLogger(o.verbose)})
	if err != nil {
		return summary{}, err
	}
	defer func() {
		if derr := c.Stop(context.Background()); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	cl := c.Client
	objs, kv, err := c.OperatorManifests()
	if err != nil {
		return summary{}, err
	}
	if err := deploy.Apply(ctx, cl, objs...); err != nil {
		return summary{}, err
	}
	if err := benchkit.Wait(ctx, "the KubeVirt CRD established and virt-operator ready", pollEvery, func() (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := cl.Get(ctx, client.ObjectKey{Name: "kubevirts.kubevirt.io"}, crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		established := false
		for _, cond := range crd.Status.Conditions {
			established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
		}
		return established && podReady(ctx, cl, deploy.OperatorName), nil
	}); err != nil {
		return summary{}, err
	}

	begin := time.Now()
	if err := cl.Create(ctx, kv); err != nil {
		return summary{}, err
	}
	if err := waitAvailable(ctx, cl, client.ObjectKeyFromObject(kv), cluster.ImageTag); err != nil {
		return summary{}, err
	}
	var sum summary
	sum.installS = time.Since(begin).Seconds()
	fmt.Printf("install: KubeVirt CR created -> Available in %.1f s\n", sum.installS)

	vmi := benchkit.GuestVMI("default", "upgrade", c.GuestImage, 256, "install")
	if err := cl.Create(ctx, vmi); err != nil {
		return summary{}, err
	}
	if err := benchkit.Wait(ctx, "the VMI Running", pollEvery, func() (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
			return false, err
		}
		if vmi.IsFinal() {
			return false, fmt.Errorf("VMI %s ended: %s", vmi.Name, vmi.Status.Phase)
		}
		return vmi.Status.Phase == virtv1.Running, nil
	}); err != nil {
		return summary{}, err
	}
	if err := c.PushImages(ctx, upgradeTag); err != nil {
		return summary{}, err
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(kv), kv); err != nil {
		return summary{}, err
	}
	kv.Spec.ImageTag = upgradeTag
	begin = time.Now()
	if err := cl.Update(ctx, kv); err != nil {
		return summary{}, err
	}
	if err := waitAvailable(ctx, cl, client.ObjectKeyFromObject(kv), upgradeTag); err != nil {
		return summary{}, err
	}
	sum.upgradeS = time.Since(begin).Seconds()
	before := vmi.UID
	if err := cl.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil || vmi.UID != before || vmi.Status.Phase != virtv1.Running {
		return summary{}, fmt.Errorf("the VMI after the upgrade: %s %s (err %v); want %s Running", vmi.UID, vmi.Status.Phase, err, before)
	}
	fmt.Printf("upgrade with one VMI running: imageTag set -> Available on %s in %.1f s, the VMI still running\n", upgradeTag, sum.upgradeS)

	pid, err := operatorPID(c.DataDir)
	if err != nil {
		return summary{}, err
	}
	cpu0 := cpuSeconds(pid)
	time.Sleep(o.idle)
	cpu := (cpuSeconds(pid) - cpu0) / o.idle.Seconds()
	sum.operatorRSSMiB = benchkit.RSSMiB(pid)
	fmt.Printf("virt-operator idle: %.1f MiB RSS, %.2f%% of a CPU over %s\n", sum.operatorRSSMiB, 100*cpu, o.idle)
	return sum, nil
}

// waitAvailable waits until the CR key is Deployed and Available with
// version tag observed.
func waitAvailable(ctx context.Context, cl client.Client, key client.ObjectKey, tag string) error {
	return benchkit.Wait(ctx, "the KubeVirt CR Available on "+tag, pollEvery, func() (bool, error) {
		kv := &virtv1.KubeVirt{}
		if err := cl.Get(ctx, key, kv); err != nil {
			return false, err
		}
		for _, cond := range kv.Status.Conditions {
			if cond.Type == virtv1.KubeVirtConditionAvailable && cond.Status == corev1.ConditionTrue {
				return kv.Status.Phase == virtv1.KubeVirtPhaseDeployed && kv.Status.ObservedKubeVirtVersion == tag, nil
			}
		}
		return false, nil
	})
}

// podReady reports whether a pod of the daemon app is Ready.
func podReady(ctx context.Context, cl client.Client, app string) bool {
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(cluster.Namespace), client.MatchingLabels{virtv1.AppLabel: app}); err != nil {
		return false
	}
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return true
			}
		}
	}
	return false
}

// operatorPID finds this cluster's virt-operator process: the one whose
// flags name the data directory.
func operatorPID(dataDir string) (int, error) {
	for _, pid := range benchkit.Processes(deploy.OperatorName) {
		if strings.Contains(benchkit.Cmdline(pid), dataDir+"/") {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no %s process with flags under %s", deploy.OperatorName, dataDir)
}

// cpuSeconds is the user and system CPU time a process used, from
// /proc/PID/stat; 0 when it is gone.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: state is the
	// first, utime and stime the 12th and 13th.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / clockTicks
}

// clockTicks is the kernel's USER_HZ, 100 on Linux for every architecture
// Go supports.
const clockTicks = 100

// pollEvery is how often a wait looks again.
const pollEvery = 100 * time.Millisecond
