package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/virtkit/virtkit/hack/bench/internal/benchkit"
)

// plotLatencies draws the cumulative distribution of creation-to-Running
// for virtkit and for plain libvirt into a PNG at path.
func plotLatencies(path string, n int, virtkit, plain []float64) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Creation to Running, %d guests created 100 ms apart", n)
	p.X.Label.Text = "seconds from create"
	p.Y.Label.Text = "fraction of guests running"
	// Headroom above 1 for the legend, so it covers no line.
	p.Y.Min, p.Y.Max = 0, 1.3
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 0.25}, {Value: 0.5, Label: "0.5"}, {Value: 0.75}, {Value: 1, Label: "1"}})
	p.Add(plotter.NewGrid())
	for _, s := range []struct {
		name string
		xs   []float64
		c    color.Color
	}{
		{"virtkit (VMI create -> phase Running)", virtkit, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
		{"plain libvirt (define -> running)", plain, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
	} {
		l, err := plotter.NewLine(benchkit.CDF(s.xs))
		if err != nil {
			return err
		}
		l.Color = s.c
		l.Width = vg.Points(2)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}
