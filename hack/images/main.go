// Command images builds the OCI images of virtkit's daemons (see
// deploy/images) from the binaries of `make daemons` and the Debian archive,
// writes them into an OCI image layout, and with -push pushes them to a
// registry. `make images` and `make images-push REGISTRY=host:port/prefix`
// run it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/virtkit/virtkit/deploy/images"
)

func main() {
	bin := flag.String("bin", "_output/bin", "folder of the daemons' binaries")
	out := flag.String("out", "_output/images", "OCI image layout to write (replaced)")
	cache := flag.String("cache", "_output/cache/debs", "folder of downloaded Debian packages")
	push := flag.String("push", "", "registry prefix to push to, host[:port][/path]; nothing is pushed when empty")
	tag := flag.String("tag", "devel", "tag of the images in the layout and the registry")
	only := flag.String("only", "", "comma-separated image names to build (default: all)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := build(ctx, *bin, *out, *cache, *push, *tag, *only); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, bin, out, cache, push, tag, only string) error {
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n != "" {
			want[n] = true
		}
	}
	var list []images.Image
	found := map[string]bool{}
	for _, img := range images.All() {
		if len(want) == 0 || want[img.Name] {
			list = append(list, img)
			found[img.Name] = true
		}
	}
	for n := range want {
		if !found[n] {
			return fmt.Errorf("-only: no image %q", n)
		}
	}

	if err := os.RemoveAll(out); err != nil {
		return err
	}
	lp, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	work := filepath.Join(out, ".layers")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(work)

	b := images.NewBuilder(bin, &images.APT{Cache: cache, Omit: images.DefaultOmit})
	for _, img := range list {
		begin := time.Now()
		built, err := b.Build(ctx, img, work)
		if err != nil {
			return err
		}
		ref := img.Name + ":" + tag
		if err := images.AppendToLayout(lp, ref, built); err != nil {
			return err
		}
		digest, compressed, unpacked, err := images.Sizes(built)
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		fmt.Printf("images: %s %s %.1f MB compressed, %.1f MB unpacked, built in %.1f s\n",
			ref, digest, float64(compressed)/1e6, float64(unpacked)/1e6, time.Since(begin).Seconds())
		if push != "" {
			target := strings.TrimSuffix(push, "/") + "/" + ref
			if err := pushImage(ctx, target, built); err != nil {
				return err
			}
			fmt.Printf("images: pushed %s\n", target)
		}
	}
	return nil
}

// pushImage pushes img to ref with the credentials of the Docker config,
// over plain HTTP when the registry is on loopback.
func pushImage(ctx context.Context, ref string, img v1.Image) error {
	var opts []name.Option
	if loopback(ref) {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return fmt.Errorf("-push: %w", err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}

// loopback reports whether ref's registry is localhost or a loopback address.
func loopback(ref string) bool {
	host := strings.SplitN(ref, "/", 2)[0]
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
