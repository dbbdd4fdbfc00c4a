// Command realnode measures a VM on virt-local's real kubelet node
// (containerd, the launcher image, virt-handler as a DaemonSet pod) next to
// its process node and plain libvirt, side by side in one run (`make
// bench-real-node`):
//
//   - the images' sizes, from the OCI layout `make images` wrote;
//   - create -> Running of one VMI (the test guest, -memory MiB, software
//     emulation, no grace period) on the real node and on the process node,
//     in turns, -runs times each after one warm-up on each (the images
//     pulled and unpacked, QEMU's capability cache filled), and the plain
//     floor: define -> running of the same guest in one private libvirtd,
//     -runs times after one warm-up. Caches are warm on all three sides.
//   - what a running VM costs beyond QEMU: on the real node the pod's
//     containerd shim, its sandbox (pause), virt-launcher and its libvirtd;
//     on the process node virt-launcher and its libvirtd. Resident memory,
//     read while one VMI runs on each node.
//
// Times are medians with min and max. It ends with one line:
//
//	real_node_overhead_mib=<n> real_node_create_to_running_s=<n> ratio_to_process_node=<n>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virtkit/virtkit/deploy/images"
	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
	"github.com/virtkit/virtkit/hack/bench/internal/plain"
	"github.com/virtkit/virtkit/internal/localcluster"
	"github.com/virtkit/virtkit/local/cluster"
)

type options struct {
	repo    string
	runs    int
	memMiB  uint
	verbose bool
}

func main() {
	var o options
	flag.StringVar(&o.repo, "repo", "../..", "checkout root (_output holds the binaries, images and test guest); the default fits a run from hack/bench")
	flag.IntVar(&o.runs, "runs", 5, "measured starts per side, after one warm-up")
	flag.UintVar(&o.memMiB, "memory", 256, "guest memory in MiB")
	flag.BoolVar(&o.verbose, "v", false, "virt-local's components' logs")
	flag.Parse()
	sum, err := run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-real-node:", err)
		os.Exit(1)
	}
	fmt.Println(sum)
}

// summary is the closing line's figures.
type summary struct {
	overheadMiB, createToRunningS, ratio float64
}

func (s summary) String() string {
	return fmt.Sprintf("real_node_overhead_mib=%.1f real_node_create_to_running_s=%.2f ratio_to_process_node=%.2f",
		s.overheadMiB, s.createToRunningS, s.ratio)
}

func run(ctx context.Context, o options) (_ summary, err error) {
	if o.runs < 1 {
		return summary{}, fmt.Errorf("-runs %d: want at least 1", o.runs)
	}
	root, err := filepath.Abs(o.repo)
	if err != nil {
		return summary{}, err
	}
	if err := printImages(filepath.Join(root, "_output", "images")); err != nil {
		return summary{}, err
	}

	local, real := fmt.Sprintf("bench-%d", os.Getpid()), fmt.Sprintf("bench-%d-kubelet", os.Getpid())
	c, err := localcluster.Start(ctx, localcluster.Options{Repo: root, Nodes: []string{local}, KubeletNode: real,
		DataPrefix: "vkn-", Logger: benchkit.ProgressLogger(o.verbose)})
	if err != nil {
		return summary{}, err
	}
	defer func() {
		if derr := c.Stop(context.Background()); derr != nil {
			err = errors.Join(err, derr)
		}
	}()

	nodes := []string{real, local}
	times := map[string][]float64{}
	for i := 0; i <= o.runs; i++ {
		for _, node := range nodes {
			s, err := createToRunning(ctx, c, node, fmt.Sprintf("run-%d", i), o.memMiB, nil)
			if err != nil {
				return summary{}, err
			}
			if i == 0 {
				fmt.Printf("warm-up on %s: %.2f s (not counted)\n", node, s)
				continue
			}
			times[node] = append(times[node], s)
		}
	}

	// One VMI on each node, running together, for the memory figures.
	overhead := map[string]float64{}
	var memErr error
	for _, node := range nodes {
		_, err := createToRunning(ctx, c, node, "memory", o.memMiB, func(vmi *virtv1.VirtualMachineInstance) {
			mib, parts, err := vmOverhead(vmi.UID, node == real)
			if err != nil {
				memErr = errors.Join(memErr, fmt.Errorf("memory on %s: %w", node, err))
				return
			}
			overhead[node] = mib
			fmt.Printf("beyond QEMU on %s: %.1f MiB RSS (%s)\n", node, mib, parts)
		})
		if err = errors.Join(err, memErr); err != nil {
			return summary{}, err
		}
	}

	floor, err := plain.Sequential(ctx, root, o.memMiB, o.runs)
	if err != nil {
		return summary{}, err
	}

	fmt.Printf("\ncreate -> Running, %d runs each after one warm-up, caches warm on every side:\n", o.runs)
	row := func(name string, xs []float64) {
		fmt.Printf("  %-34s median %6.2f s  min %6.2f s  max %6.2f s\n", name, median(xs), slices.Min(xs), slices.Max(xs))
	}
	row("real node (kubelet, containerd)", times[real])
	row("process node (virt-local's own)", times[local])
	row("plain libvirt (define -> running)", floor)
	ratio := median(times[real]) / median(times[local])
	fmt.Printf("  real node / process node: %.2fx; real node / plain libvirt: %.2fx\n", ratio, median(times[real])/median(floor))
	return summary{overheadMiB: overhead[real], createToRunningS: median(times[real]), ratio: ratio}, nil
}

// createToRunning creates the test guest's VMI on node, waits until it
// runs, calls while (if set), deletes it and waits until it and its pod are
// gone. It returns the seconds from the create call to the first sight of
// phase Running.
func createToRunning(ctx context.Context, c *localcluster.Cluster, node, name string, memMiB uint, while func(*virtv1.VirtualMachineInstance)) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	vmi := benchkit.GuestVMI("default", name+"-"+strings.TrimPrefix(node, "bench-"), c.GuestImage, memMiB, "real-node")
	vmi.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	begin := time.Now()
	if err := c.Client.Create(ctx, vmi); err != nil {
		return 0, err
	}
	defer func() {
		_ = c.Client.Delete(context.WithoutCancel(ctx), vmi)
		_ = benchkit.Wait(ctx, "VMI "+vmi.Name+" and its pod gone", pollEvery, func() (bool, error) {
			var pods corev1.PodList
			if err := c.Client.List(ctx, &pods, client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)}); err != nil {
				return false, err
			}
			err := c.Client.Get(ctx, client.ObjectKeyFromObject(vmi), &virtv1.VirtualMachineInstance{})
			return len(pods.Items) == 0 && apierrors.IsNotFound(err), nil
		})
	}()
	var took float64
	err := benchkit.Wait(ctx, "VMI "+vmi.Name+" Running on "+node, pollEvery, func() (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
			return false, err
		}
		if vmi.IsFinal() {
			return false, fmt.Errorf("VMI %s ended: %s %s", vmi.Name, vmi.Status.Phase, vmi.Status.Reason)
		}
		took = time.Since(begin).Seconds()
		return vmi.Status.Phase == virtv1.Running, nil
	})
	if err != nil {
		return 0, err
	}
	if while != nil {
		while(vmi)
	}
	return took, nil
}

// vmOverhead is the resident memory of what runs a VM beyond its QEMU:
// the launcher of VMI uid and its libvirtd, and on a real node the pod's
// shim and sandbox process too.
func vmOverhead(uid types.UID, container bool) (float64, string, error) {
	dir := "--dir /var/run/virtkit/" + string(uid)
	var launcher int
	for _, pid := range benchkit.Processes("virt-launcher") {
		if strings.Contains(benchkit.Cmdline(pid), dir) {
			launcher = pid
		}
	}
	if launcher == 0 {
		return 0, "", fmt.Errorf("no virt-launcher with %s", dir)
	}
	parts := map[string]int{"virt-launcher": launcher}
	for _, pid := range benchkit.Processes("libvirtd") {
		if benchkit.ParentPID(pid) == launcher {
			parts["libvirtd"] = pid
		}
	}
	if container {
		shim := benchkit.ParentPID(launcher)
		parts["containerd-shim"] = shim
		for _, pid := range benchkit.Processes("pause") {
			if benchkit.ParentPID(pid) == shim {
				parts["pause"] = pid
			}
		}
	}
	var total float64
	var desc []string
	for _, name := range []string{"containerd-shim", "pause", "virt-launcher", "libvirtd"} {
		pid, ok := parts[name]
		if !ok {
			continue
		}
		mib := benchkit.RSSMiB(pid)
		total += mib
		desc = append(desc, fmt.Sprintf("%s %.1f", name, mib))
	}
	return total, strings.Join(desc, ", "), nil
}

// printImages prints the compressed and unpacked size of every image.
func printImages(dir string) error {
	fmt.Println("images (compressed, unpacked):")
	for _, img := range images.All() {
		built, err := images.FromLayout(dir, img.Name+":"+cluster.ImageTag)
		if err != nil {
			return fmt.Errorf("%w (make images)", err)
		}
		_, compressed, unpacked, err := images.Sizes(built)
		if err != nil {
			return err
		}
		fmt.Printf("  %-16s %6.1f MB %6.1f MB\n", img.Name, float64(compressed)/1e6, float64(unpacked)/1e6)
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// pollEvery is how often a wait looks again.
const pollEvery = 20 * time.Millisecond
