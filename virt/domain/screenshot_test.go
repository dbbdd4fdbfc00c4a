package domain_test

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	"github.com/virtkit/virtkit/virt/domain"
)

func TestScreenshotPNG(t *testing.T) {
	// A 2x1 PPM: a red pixel, then a blue one, with a comment in the header.
	ppm := append([]byte("P6\n# made by QEMU\n2 1\n255\n"), 255, 0, 0, 0, 0, 255)
	b, err := domain.Screenshot{MIME: domain.MIMEPPM, Data: ppm}.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if r := img.Bounds(); r.Dx() != 2 || r.Dy() != 1 {
		t.Fatalf("bounds %v, want 2x1", r)
	}
	for x, want := range [][3]uint32{{0xffff, 0, 0}, {0, 0, 0xffff}} {
		r, g, bl, a := img.At(x, 0).RGBA()
		if [3]uint32{r, g, bl} != want || a != 0xffff {
			t.Errorf("pixel %d = %d,%d,%d,%d, want %v opaque", x, r, g, bl, a, want)
		}
	}
	// A PNG passes through as it is.
	if got, err := (domain.Screenshot{MIME: domain.MIMEPNG, Data: b}).PNG(); err != nil || !bytes.Equal(got, b) {
		t.Errorf("PNG of a PNG: %v", err)
	}

	for _, c := range []struct {
		name string
		shot domain.Screenshot
		err  string
	}{
		{"another format", domain.Screenshot{MIME: "image/bmp", Data: []byte("BM")}, `"image/bmp"`},
		{"ASCII PPM", domain.Screenshot{MIME: domain.MIMEPPM, Data: []byte("P3\n1 1\n255\n0 0 0\n")}, "not a binary PPM"},
		{"16-bit PPM", domain.Screenshot{MIME: domain.MIMEPPM, Data: []byte("P6\n1 1\n65535\n\x00\x00\x00\x00\x00\x00")}, "only 255"},
		{"truncated pixels", domain.Screenshot{MIME: domain.MIMEPPM, Data: []byte("P6\n2 2\n255\n\x00\x00\x00")}, "2x2 pixels"},
		{"a huge size", domain.Screenshot{MIME: domain.MIMEPPM, Data: []byte("P6\n100000 100000\n255\n")}, "larger than 16384"},
		{"a negative size", domain.Screenshot{MIME: domain.MIMEPPM, Data: []byte("P6\n-1 1\n255\n")}, "malformed PPM"},
		{"an endless token", domain.Screenshot{MIME: domain.MIMEPPM, Data: []byte("P6\n" + strings.Repeat("9", 40))}, "longer than 16 bytes"},
		{"an empty header", domain.Screenshot{MIME: domain.MIMEPPM}, "not a binary PPM"},
	} {
		if _, err := c.shot.PNG(); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.err)
		}
	}
}
