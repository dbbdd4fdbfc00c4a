// Command run is `make run`: it starts virt-local (or finds it running),
// pushes the test guest's disk into virt-local's registry as the
// manifest's containerDisk (unless it is there already), applies a VM
// manifest, starts the VM if it is stopped (as virtctl start does), waits
// until it runs, shows the guest's console
// through the subresources API as virtctl console does, and says what to
// try next. The daemons' logs go to virt-local's log file, not to the
// terminal. It ends with one machine-readable line:
//
//	vm=<name> phase=Running console_marker=<yes|no>
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/internal/scheme"
	"github.com/virtkit/virtkit/local/cluster"
	"github.com/virtkit/virtkit/local/registry"
	"github.com/virtkit/virtkit/virt/launcher/contract"
	"github.com/virtkit/virtkit/virtapi/subresources"
)

// guestImage is the manifest's containerDisk, in the registry virt-local
// serves on its default address (local/registry.DefaultAddr).
const guestImage = "localhost:5000/virtkit/test-guest:latest"

func main() {
	var (
		data     = flag.String("data-dir", "_output/local", "virt-local's data directory")
		bin      = flag.String("bin-dir", "_output/bin", "folder of virt-local and the other binaries")
		guest    = flag.String("guest", "_output/guest", "the test guest (make guest), published as "+guestImage)
		manifest = flag.String("manifest", "examples/manifests/vm-tiny.yaml", "the VirtualMachine to run")
		timeout  = flag.Duration("timeout", 10*time.Minute, "how long to wait for the VM")
	)
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	name, marker, err := run(ctx, *data, *bin, *guest, *manifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		fmt.Printf("vm=%s phase=NotRunning console_marker=no\n", name)
		os.Exit(1)
	}
	fmt.Printf("vm=%s phase=Running console_marker=%s\n", name, yesNo(marker))
}

func run(ctx context.Context, data, bin, guest, manifest string) (string, bool, error) {
	vm, err := readVM(manifest)
	if err != nil {
		return "", false, err
	}
	step("starting virt-local (a second run finds it running)")
	// up prints its own lines and the cluster's steps; the components'
	// logs go to virt-local's log file only, whose path it prints.
	up := exec.CommandContext(ctx, filepath.Join(bin, "virt-local"), "up", "--data-dir", data)
	up.Stdout, up.Stderr = &indent{w: os.Stdout}, os.Stderr
	if err := up.Run(); err != nil {
		return vm.Name, false, fmt.Errorf("virt-local up: %w", err)
	}
	step("publishing the test guest as " + guestImage)
	if err := publishGuest(ctx, guest); err != nil {
		return vm.Name, false, err
	}
	kubeconfig := filepath.Join(data, "controlplane", "kubeconfig")
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return vm.Name, false, err
	}
	cl, err := client.New(rc, client.Options{Scheme: scheme.New()})
	if err != nil {
		return vm.Name, false, err
	}
	step("applying " + manifest)
	if err := cl.Create(ctx, vm); apierrors.IsAlreadyExists(err) {
		fmt.Printf("  VirtualMachine %s/%s exists; using it\n", vm.Namespace, vm.Name)
	} else if err != nil {
		return vm.Name, false, fmt.Errorf("creating VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err)
	}
	sub, err := subresources.NewClient(rc)
	if err != nil {
		return vm.Name, false, err
	}
	step("waiting for the VM to run")
	vmi, err := waitRunning(ctx, cl, sub, client.ObjectKeyFromObject(vm))
	if err != nil {
		return vm.Name, false, err
	}
	step("the guest's console (virtctl console, through the apiserver)")
	serial := ""
	if folder, err := (cluster.Config{DataDir: data}).LauncherFolder(ctx, cl, vmi, ""); err == nil {
		serial = filepath.Join(folder, contract.SerialLog)
		printBootLog(serial)
	}
	marker, err := watchConsole(ctx, sub, vmi, 30*time.Second)
	if err != nil {
		return vm.Name, false, err
	}
	ip := ""
	if len(vmi.Status.Interfaces) > 0 {
		ip = vmi.Status.Interfaces[0].IP
	}
	step("try next")
	fmt.Printf(`  export KUBECONFIG=%s
  kubectl get vm,vmi,pods -o wide
  curl http://%s/                      # the guest's web server, through the pod network
  tail -f %s   # its console log
  less %s   # virt-local's log: every component's
  make stop                            # stops virt-local; guests shut down gracefully
`, kubeconfig, ip, serial, filepath.Join(data, "virt-local.log"))
	return vm.Name, marker, nil
}

func readVM(path string) (*virtv1.VirtualMachine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vm := &virtv1.VirtualMachine{}
	if err := yaml.UnmarshalStrict(b, vm); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if vm.Kind != "VirtualMachine" {
		return nil, fmt.Errorf("%s: kind %q, want VirtualMachine", path, vm.Kind)
	}
	if vm.Namespace == "" {
		vm.Namespace = "default"
	}
	return vm, nil
}

// publishGuest pushes the test guest's disk as the manifest's
// containerDisk into virt-local's registry; a push of the disk it already
// has sends nothing.
func publishGuest(ctx context.Context, guest string) error {
	disk := filepath.Join(guest, "disk.qcow2")
	if _, err := os.Stat(disk); err != nil {
		return fmt.Errorf("the test guest: %w (run `make guest`)", err)
	}
	digest, pushed, err := registry.PushContainerDisk(ctx, guestImage, disk)
	if err != nil {
		return fmt.Errorf("%w (`virt-local status` shows the registry; a virt-local older than its registry needs `make stop` first)", err)
	}
	if pushed {
		fmt.Printf("  pushed %s as %s@%s\n", disk, guestImage, digest)
	} else {
		fmt.Printf("  %s is in the registry (%s)\n", guestImage, digest)
	}
	return nil
}

// waitRunning waits until the VM's VMI runs, starting the VM first when it
// is stopped (startDecision), once, as virtctl start does.
func waitRunning(ctx context.Context, cl client.Client, sub *subresources.Client, key client.ObjectKey) (*virtv1.VirtualMachineInstance, error) {
	last, tried, started := "", false, false
	for {
		vm := &virtv1.VirtualMachine{}
		if err := cl.Get(ctx, key, vm); err != nil {
			return nil, fmt.Errorf("VirtualMachine %s: %w", key, err)
		}
		vmi := &virtv1.VirtualMachineInstance{}
		if err := cl.Get(ctx, key, vmi); apierrors.IsNotFound(err) {
			vmi = nil
		} else if err != nil {
			return nil, err
		}
		state := "no VMI yet"
		if vmi != nil {
			state = "phase " + string(vmi.Status.Phase)
			for _, c := range vmi.Status.Conditions {
				if c.Status == "False" && c.Message != "" {
					state += fmt.Sprintf(" (%s: %s)", c.Type, c.Message)
				}
			}
		}
		action, why := startDecision(vm, vmi)
		switch action {
		case cannotStart:
			return nil, fmt.Errorf("VirtualMachine %s (%s): %s", key, state, why)
		case startVM:
			if started {
				return nil, fmt.Errorf("VirtualMachine %s stopped again after make run started it (%s): %s", key, state, why)
			}
			if !tried {
				fmt.Printf("  %s/%s: %s; starting it as virtctl start does\n", key.Namespace, key.Name, why)
				tried = true
			}
			var refused *subresources.StatusError
			err := sub.Start(ctx, key.Namespace, key.Name, virtv1.StartOptions{})
			switch {
			case err == nil:
				started, why = true, "start requested"
			case errors.As(err, &refused) && refused.Status.Code == http.StatusConflict:
				// Its state changed since it was read: decide again.
				why = fmt.Sprintf("start refused (%v); trying again", err)
			case errors.As(err, &refused) && refused.Status.Code == http.StatusServiceUnavailable:
				// A virt-local that just started: the apiserver does not
				// route to virt-api until it has found it available.
				why = "the subresources API is not available yet; trying again"
			default:
				return nil, fmt.Errorf("starting VirtualMachine %s: %w", key, err)
			}
		case awaitRun:
			if vmi != nil && vmi.Status.Phase == virtv1.Running && vmi.DeletionTimestamp == nil {
				// A VMI left Running by a virt-local that stopped has no
				// launcher any more: wait for the one that runs.
				if ok, perr := launcherRuns(ctx, cl, vmi); perr != nil {
					return nil, perr
				} else if ok {
					fmt.Printf("  %s/%s: Running on %s\n", key.Namespace, key.Name, vmi.Status.NodeName)
					return vmi, nil
				}
				why = "its launcher pod is not running (being replaced)"
			}
		}
		if why != "" {
			state += ", " + why
		}
		if state != last {
			fmt.Printf("  %s/%s: %s\n", key.Namespace, key.Name, state)
			last = state
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("VMI %s not Running (last: %s): %w", key, last, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// launcherRuns reports whether the VMI's launcher pod runs.
func launcherRuns(ctx context.Context, cl client.Client, vmi *virtv1.VirtualMachineInstance) (bool, error) {
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(vmi.Namespace), client.MatchingLabels{virtv1.CreatedByLabel: string(vmi.UID)}); err != nil {
		return false, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return true, nil
		}
	}
	return false, nil
}

// printBootLog shows what the guest printed before the console was opened
// (the launcher keeps a console log on the node).
func printBootLog(serial string) {
	f, err := os.Open(serial)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	beat := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "VIRTKIT-HEARTBEAT"):
			beat = line // one a second: only the last is worth showing
		case strings.HasPrefix(line, "VIRTKIT-") || strings.Contains(line, "hello from"):
			fmt.Println("  log|", line)
		}
	}
	if beat != "" {
		fmt.Println("  log|", beat)
	}
}

// watchConsole prints console lines until the guest shows a marker (its
// heartbeat) or d passes; it reports whether a marker came through.
func watchConsole(ctx context.Context, c *subresources.Client, vmi *virtv1.VirtualMachineInstance, d time.Duration) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	con, err := c.Console(cctx, vmi.Namespace, vmi.Name)
	if err != nil {
		return false, fmt.Errorf("console of %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	go func() { <-cctx.Done(); con.Close() }()
	sc := bufio.NewScanner(con)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fmt.Println("  console|", line)
		if strings.HasPrefix(line, "VIRTKIT-HEARTBEAT") || strings.HasPrefix(line, "VIRTKIT-READY") {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return false, err
	}
	return false, nil
}

func step(s string) { fmt.Println("==>", s) }

// indent writes to w with every line indented by two spaces, as the lines
// under a step.
type indent struct {
	w   io.Writer
	mid bool // within a line
}

func (in *indent) Write(p []byte) (int, error) {
	var b []byte
	for _, c := range p {
		if !in.mid {
			b = append(b, ' ', ' ')
		}
		b = append(b, c)
		in.mid = c != '\n'
	}
	if _, err := in.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
