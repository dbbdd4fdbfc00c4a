package domain

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"strconv"
)

// MaxScreenshotBytes bounds the image a Screenshot reads from the
// hypervisor: an 8K display in 24-bit pixels is about 100 MiB, far beyond
// any guest console; anything larger is refused rather than held in memory.
const MaxScreenshotBytes = 64 << 20

// MIME types of screenshots.
const (
	MIMEPNG = "image/png"
	// MIMEPPM is what QEMU's screendump writes unless asked for PNG.
	MIMEPPM = "image/x-portable-pixmap"
)

// Screenshot is one capture of a domain's primary display.
type Screenshot struct {
	// MIME is the image's type as the hypervisor reports it.
	MIME string
	// Data is the image.
	Data []byte
}

// PNG returns the screenshot as a PNG: Data itself when it is one, the
// pixels of a binary PPM (P6, 8 bits per channel) re-encoded otherwise.
func (s Screenshot) PNG() ([]byte, error) {
	switch s.MIME {
	case MIMEPNG:
		return s.Data, nil
	case MIMEPPM:
		img, err := decodePPM(s.Data)
		if err != nil {
			return nil, fmt.Errorf("screenshot: %w", err)
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			return nil, fmt.Errorf("screenshot: encoding PNG: %w", err)
		}
		return b.Bytes(), nil
	}
	return nil, fmt.Errorf("screenshot: the hypervisor gave %q, neither %s nor %s", s.MIME, MIMEPNG, MIMEPPM)
}

// maxScreenSide bounds each side of a decoded PPM, as Data's size does.
const maxScreenSide = 16384

// decodePPM reads a binary PPM (P6) with a maximum value of 255.
func decodePPM(data []byte) (image.Image, error) {
	r := bufio.NewReader(bytes.NewReader(data))
	var header [4]int // magic checked apart; width, height, maxval
	magic, err := ppmToken(r)
	if err != nil || magic != "P6" {
		return nil, fmt.Errorf("not a binary PPM (magic %q): %w", magic, errPPM)
	}
	for i := 1; i < 4; i++ {
		tok, err := ppmToken(r)
		if err != nil {
			return nil, fmt.Errorf("PPM header: %w", err)
		}
		if header[i], err = strconv.Atoi(tok); err != nil || header[i] <= 0 {
			return nil, fmt.Errorf("PPM header field %d is %q: %w", i, tok, errPPM)
		}
	}
	w, h, maxval := header[1], header[2], header[3]
	if w > maxScreenSide || h > maxScreenSide {
		return nil, fmt.Errorf("PPM of %dx%d pixels: larger than %d on a side: %w", w, h, maxScreenSide, errPPM)
	}
	if maxval != 255 {
		return nil, fmt.Errorf("PPM with maximum value %d, only 255 is read: %w", maxval, errPPM)
	}
	// One whitespace byte ends the header (ppmToken consumed it).
	pix := make([]byte, w*h*3)
	if _, err := io.ReadFull(r, pix); err != nil {
		return nil, fmt.Errorf("PPM of %dx%d pixels: %w", w, h, err)
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ { // the rows of an RGBA of width w are contiguous
		copy(img.Pix[4*i:4*i+3], pix[3*i:3*i+3])
		img.Pix[4*i+3] = 255
	}
	return img, nil
}

var errPPM = errors.New("malformed PPM")

// ppmToken reads one whitespace-separated header token, skipping comments,
// and consumes the single whitespace byte after it.
func ppmToken(r *bufio.Reader) (string, error) {
	var tok []byte
	for {
		c, err := r.ReadByte()
		if err != nil {
			return "", fmt.Errorf("PPM header: %w", err)
		}
		switch {
		case c == '#' && len(tok) == 0:
			if _, err := r.ReadBytes('\n'); err != nil {
				return "", fmt.Errorf("PPM header comment: %w", err)
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if len(tok) > 0 {
				return string(tok), nil
			}
		default:
			if len(tok) >= 16 {
				return "", fmt.Errorf("PPM header token longer than 16 bytes: %w", errPPM)
			}
			tok = append(tok, c)
		}
	}
}
