// Command migration is `make bench-migration`: live migration of the test
// guest through virtkit on virt-local, with its floor, a plain libvirt
// migration of the same guest, measured in the same run.
//
// For each guest size (-sizes, MiB; 256 and 1024 by default) it runs:
//
//  1. plain: two private libvirtd on this machine; the test guest (that
//     memory, 1 vCPU, software emulation, booting from its own qcow2
//     overlay of the guest disk, as a containerDisk does) boots on the
//     first and migrates to the second with virt/migrate.Run, pre-copy,
//     unlimited bandwidth, the overlay copied incrementally, the memory
//     stream on loopback TCP; -runs times, a fresh guest each time. Time
//     runs from Run's start until the destination shows the guest running
//     with no migration job left (polled every 10 ms: what the target's
//     handler waits for before it takes a VMI over); downtime is
//     libvirt's, from the destination's completed job.
//  2. virtkit: a fresh virt-local with two local nodes; a VMI of the same
//     guest (containerDisk from the local registry, masquerade on the pod
//     network) boots on one and migrates -runs times, back and
//     forth, each time by a VirtualMachineInstanceMigration as `virtctl
//     migrate` creates it. Time is what the API shows of the migration
//     proper: from the source handler's status.migrationState.startTimestamp
//     write to the target handler's takeover write (completed, the new
//     node), each seen through a watch with this machine's clock;
//     end-to-end is from the migration's creation to its phase Succeeded
//     (target pod scheduling and start, target preparation included).
//     Downtime is libvirt's, read from the target launcher's libvirt.
//
// With -block-mib (1024 by default; 0 leaves it out), both kinds also
// migrate a 256 MiB guest with a raw data disk of that size, full of
// pseudo-random data, which the migration copies to an empty image of its
// size on the other side: plain libvirt's block migration of the disk,
// and on virtkit a VMI whose data disk is a ReadWriteOnce claim, which the
// migration copies to a new claim (docs/migration.md).
//
// It ends with one machine-readable line:
//
//	migration_time_ratio=<number> downtime_ms=<number> plain_downtime_ms=<number> block_migration_ratio=<number>
//
// where the first ratio is the mean over the sizes of virtkit's median
// migration time over the plain one's (the goal is 1.15 at most), the
// downtimes are the medians across sizes and runs, and the block ratio is
// virtkit's median time of the data-disk migration over the plain one's. Each kind and size also reports
// its median, smallest and largest run, so that one slow run shows as an
// outlier instead of moving the figure.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
)

type options struct {
	sizes    []uint // MiB
	blockMiB uint   // the data disk of the block migration; 0: none
	runs     int
	repo     string
	timeout  time.Duration
	verbose  bool
}

func main() {
	var o options
	sizes := flag.String("sizes", "256,1024", "guest memory sizes in MiB, comma-separated")
	flag.IntVar(&o.runs, "runs", 3, "migrations per size and kind")
	flag.UintVar(&o.blockMiB, "block-mib", 1024, "size in MiB of the data disk a block migration copies (0: no block migration)")
	flag.StringVar(&o.repo, "repo", "../..", "checkout root (_output holds the binaries and the test guest); the default fits a run from hack/bench")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "limit for the whole benchmark")
	flag.BoolVar(&o.verbose, "v", false, "the components' logs on stderr")
	flag.Parse()
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
		if err != nil || n < 64 {
			fmt.Fprintf(os.Stderr, "bench-migration: -sizes: %q is not a size in MiB of at least 64\n", s)
			os.Exit(2)
		}
		o.sizes = append(o.sizes, uint(n))
	}
	if o.verbose {
		ctrllog.SetLogger(benchkit.ProgressLogger(true))
	} else {
		ctrllog.SetLogger(logr.Discard())
	}
	if _, err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-migration:", err)
		os.Exit(1)
	}
}

// sample is one migration's figures.
type sample struct {
	total, downtime time.Duration
	endToEnd        time.Duration // virtkit only
}

// summary is the machine-readable line's content.
type summary struct {
	ratio                       float64
	downtimeMS, plainDowntimeMS float64
	blockRatio                  float64 // 0: not measured
}

func (s summary) String() string {
	line := fmt.Sprintf("migration_time_ratio=%.3f downtime_ms=%.0f plain_downtime_ms=%.0f", s.ratio, s.downtimeMS, s.plainDowntimeMS)
	if s.blockRatio > 0 {
		line += fmt.Sprintf(" block_migration_ratio=%.3f", s.blockRatio)
	}
	return line
}

// blockMemMiB is the memory of the guest of the block migration.
const blockMemMiB = 256

func run(o options) (summary, error) {
	if o.runs < 1 || len(o.sizes) == 0 {
		return summary{}, fmt.Errorf("want at least one run of one size (-runs %d, -sizes %v)", o.runs, o.sizes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	root, err := filepath.Abs(o.repo)
	if err != nil {
		return summary{}, err
	}
	o.repo = root
	host, _ := os.Hostname()
	fmt.Printf("machine: %s; guest sizes %v MiB, %d migrations per size and kind, software emulation\n", host, o.sizes, o.runs)

	plain := map[uint][]sample{}
	for _, size := range o.sizes {
		if plain[size], err = runPlain(ctx, o, size, 0); err != nil {
			return summary{}, fmt.Errorf("plain libvirt, %d MiB: %w", size, err)
		}
		report("plain libvirt", size, plain[size])
	}
	var plainBlock []sample
	if o.blockMiB > 0 {
		if plainBlock, err = runPlain(ctx, o, blockMemMiB, o.blockMiB); err != nil {
			return summary{}, fmt.Errorf("plain libvirt, %d MiB with a %d MiB data disk: %w", blockMemMiB, o.blockMiB, err)
		}
		reportBlock("plain libvirt", o.blockMiB, plainBlock)
	}
	local, localBlock, err := runLocal(ctx, o)
	if err != nil {
		return summary{}, fmt.Errorf("virtkit on virt-local: %w", err)
	}
	var vk, pl []sample
	var ratios float64
	for _, size := range o.sizes {
		report("virtkit", size, local[size])
		v, p := spread(local[size], total).Median, spread(plain[size], total).Median
		ratio := v.Seconds() / p.Seconds()
		ratios += ratio
		fmt.Printf("  %4d MiB: migration time ratio %.3f (medians: virtkit %s / plain %s)\n", size, ratio, v, p)
		vk, pl = append(vk, local[size]...), append(pl, plain[size]...)
	}
	sum := summary{
		ratio:           ratios / float64(len(o.sizes)),
		downtimeMS:      float64(spread(vk, downtime).Median) / float64(time.Millisecond),
		plainDowntimeMS: float64(spread(pl, downtime).Median) / float64(time.Millisecond),
	}
	if o.blockMiB > 0 {
		reportBlock("virtkit", o.blockMiB, localBlock)
		v, p := spread(localBlock, total).Median, spread(plainBlock, total).Median
		sum.blockRatio = v.Seconds() / p.Seconds()
		fmt.Printf("  %d MiB data disk: block migration time ratio %.3f (medians: virtkit %s / plain %s)\n", o.blockMiB, sum.blockRatio, v, p)
	}
	fmt.Println(sum)
	return sum, nil
}

func reportBlock(kind string, dataMiB uint, ss []sample) {
	report(fmt.Sprintf("%s, %d MiB data disk", kind, dataMiB), blockMemMiB, ss)
}

func total(s sample) time.Duration    { return s.total }
func downtime(s sample) time.Duration { return s.downtime }
func endToEnd(s sample) time.Duration { return s.endToEnd }

// spread is the Spread of f over ss.
func spread(ss []sample, f func(sample) time.Duration) benchkit.Spread {
	ds := make([]time.Duration, 0, len(ss))
	for _, s := range ss {
		ds = append(ds, f(s))
	}
	return benchkit.SpreadOf(ds)
}

func report(kind string, size uint, ss []sample) {
	var parts []string
	for _, s := range ss {
		p := fmt.Sprintf("%s (downtime %s", s.total.Round(time.Millisecond), s.downtime)
		if s.endToEnd > 0 {
			p += fmt.Sprintf(", end to end %s", s.endToEnd.Round(time.Millisecond))
		}
		parts = append(parts, p+")")
	}
	line := fmt.Sprintf("%s, %4d MiB: median %s, downtime %s", kind, size, spread(ss, total), spread(ss, downtime))
	if e := spread(ss, endToEnd); e.Max > 0 {
		line += fmt.Sprintf(", end to end %s", e)
	}
	fmt.Printf("%s; runs: %s\n", line, strings.Join(parts, ", "))
}
