// Command imports measures DataVolume imports (`make bench-import`): the
// importer library (virt/storage/importer, what virt-importer runs) reading
// a disk image over HTTPS on loopback, next to the plain tools doing the
// same job in the same run, on the same file cache:
//
//   - qcow2: the importer (download to scratch, qemu-img convert to raw)
//     against `curl -o` then `qemu-img convert -O raw`;
//   - raw.xz: the importer (decompressed while streaming, written sparsely)
//     against `curl -o` then `xz -dc >`;
//
// both sides ending with the disk flushed (`sync FILE` for the tools), as
// the importer flushes before it reports success;
//
// each -runs times, alternating sides, after one warm-up of each. The
// image is -size bytes of data that compresses as a disk does (about half
// of it zeros, the rest text-like bytes). It reports the median, min and
// max time and throughput (virtual bytes per second) of each side and ends
// with one machine-readable line:
//
//	import_ratio_qcow2=<n> import_ratio_xz=<n> import_ratio=<the lower>
//
// and uploads of the raw image: curl posting it through the upload proxy
// and an upload server that imports it (virt/storage/upload, what virt-api
// and an upload pod run, in one process here), against `curl -T` of the
// same file to an HTTPS server that stores it and syncs it. Its ratio is
// on the last line too:
//
//	... upload_ratio=<n>
//
// where a ratio is virtkit's median throughput over the plain tools'.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/virtkit/virtkit/virt/storage/importer"
)

func main() {
	var (
		size = flag.Int64("size", 1<<30, "virtual size of the test image in bytes")
		runs = flag.Int("runs", 5, "measured runs of each side, after one warm-up")
		dir  = flag.String("dir", "/tmp", "where the images and disks are written")
	)
	flag.Parse()
	if err := run(*size, *runs, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench-import:", err)
		os.Exit(1)
	}
}

func run(size int64, runs int, parent string) error {
	ctx := context.Background()
	base, err := os.MkdirTemp(parent, "vkb-import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	raw := filepath.Join(base, "image.raw")
	if err := writeImage(raw, size); err != nil {
		return err
	}
	qcow2, xzFile := filepath.Join(base, "image.qcow2"), filepath.Join(base, "image.raw.xz")
	if out, err := exec.Command("qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, qcow2).CombinedOutput(); err != nil {
		return fmt.Errorf("qemu-img convert: %v: %s", err, out)
	}
	if out, err := exec.Command("xz", "-k", "-T0", "-1", raw).CombinedOutput(); err != nil {
		return fmt.Errorf("xz: %v: %s", err, out)
	}
	for _, f := range []string{qcow2, xzFile} {
		st, err := os.Stat(f)
		if err != nil {
			return err
		}
		fmt.Printf("image %s: %d MiB on the wire for %d MiB of disk\n", filepath.Base(f), st.Size()>>20, size>>20)
	}

	srv := httptest.NewUnstartedServer(http.FileServer(http.Dir(base)))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(base, "ca.pem")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		return err
	}
	target := filepath.Join(base, "disk.img")
	scratch := filepath.Join(base, "scratch")

	var ratios []float64
	line := ""
	for _, c := range []struct {
		name, file string
		plain      func(ctx context.Context, url, dl string) error
	}{
		{"qcow2", "image.qcow2", func(ctx context.Context, url, dl string) error {
			if err := command(ctx, "curl", "-sS", "--fail", "--cacert", ca, "-o", dl, url); err != nil {
				return err
			}
			if err := command(ctx, "qemu-img", "convert", "-t", "writeback", "-f", "qcow2", "-O", "raw", dl, target); err != nil {
				return err
			}
			return command(ctx, "sync", target)
		}},
		{"xz", "image.raw.xz", func(ctx context.Context, url, dl string) error {
			if err := command(ctx, "curl", "-sS", "--fail", "--cacert", ca, "-o", dl, url); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			defer out.Close()
			cmd := exec.CommandContext(ctx, "xz", "-dc", dl)
			cmd.Stdout = out
			if err := cmd.Run(); err != nil {
				return err
			}
			return out.Sync()
		}},
	} {
		url := srv.URL + "/" + c.file
		dl := filepath.Join(base, "download")
		virtkit := func() (time.Duration, error) {
			defer os.Remove(target)
			return virtkitKeep(ctx, url, caPEM, target, scratch, size)
		}
		plain := func() (time.Duration, error) {
			defer os.Remove(target)
			defer os.Remove(dl)
			start := time.Now()
			err := c.plain(ctx, url, dl)
			return time.Since(start), err
		}
		// One warm-up of each, which also checks that both write the same
		// disk: the image is in the page cache for both after it.
		keep := func(f func() (time.Duration, error)) (string, error) {
			if _, err := f(); err != nil {
				return "", err
			}
			return digest(target)
		}
		mine, err := keep(func() (time.Duration, error) { return virtkitKeep(ctx, url, caPEM, target, scratch, size) })
		if err != nil {
			return fmt.Errorf("%s warm-up: %w", c.name, err)
		}
		theirs, err := keep(func() (time.Duration, error) { return 0, c.plain(ctx, url, dl) })
		if err != nil {
			return fmt.Errorf("%s plain warm-up: %w", c.name, err)
		}
		if mine != theirs {
			return fmt.Errorf("%s: the importer's disk (sha256 %s) differs from the plain tools' (%s)", c.name, mine, theirs)
		}
		_ = os.Remove(dl)
		_ = os.Remove(target)
		var vk, pl []time.Duration
		for i := 0; i < runs; i++ {
			d, err := virtkit()
			if err != nil {
				return fmt.Errorf("%s run %d: %w", c.name, i, err)
			}
			vk = append(vk, d)
			if d, err = plain(); err != nil {
				return fmt.Errorf("%s plain run %d: %w", c.name, i, err)
			}
			pl = append(pl, d)
		}
		report(c.name+" importer", vk, size)
		report(c.name+" plain", pl, size)
		r := median(pl).Seconds() / median(vk).Seconds()
		ratios = append(ratios, r)
		line += fmt.Sprintf("import_ratio_%s=%.2f ", c.name, r)
	}
	up, err := benchUpload(ctx, base, raw, target, size, runs)
	if err != nil {
		return err
	}
	fmt.Printf("%simport_ratio=%.2f upload_ratio=%.2f\n", line, min(ratios[0], ratios[1]), up)
	return nil
}

// virtkitKeep imports url into target as virt-importer does.
func virtkitKeep(ctx context.Context, url string, caPEM []byte, target, scratch string, size int64) (time.Duration, error) {
	im := importer.New(importer.WithXZ("xz"))
	start := time.Now()
	_, err := im.Import(ctx, importer.HTTPSource{URL: url, CABundle: caPEM},
		importer.Target{Path: target, Size: size, ScratchDir: scratch})
	return time.Since(start), err
}

// digest is the sha256 of a file, in hex.
func digest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func command(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, bytes.TrimSpace(out))
	}
	return nil
}

// writeImage writes size bytes that compress as a disk image does: in
// each MiB, about half zeros and half text-like bytes.
func writeImage(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	chunk := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(chunk)) {
		clear(chunk)
		if rng.IntN(2) == 0 {
			for i := range chunk {
				chunk[i] = 'a' + byte(rng.IntN(16))
			}
		}
		n := min(int64(len(chunk)), size-off)
		if _, err := f.Write(chunk[:n]); err != nil {
			return err
		}
	}
	return f.Close()
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func report(name string, ds []time.Duration, size int64) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	mibs := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	fmt.Printf("%-16s median %6.2fs (%5.0f MiB/s)  min %6.2fs  max %6.2fs  over %d runs\n",
		name, median(ds).Seconds(), mibs(median(ds)), s[0].Seconds(), s[len(s)-1].Seconds(), len(ds))
}
