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

// plotLatencies draws each run's creation-to-Running distribution into a
// PNG at path.
func plotLatencies(path string, o options, rs []*result) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Creation to Running on %d hollow nodes, %g VMIs created per second", o.nodes, o.rate)
	p.X.Label.Text = "seconds from create"
	p.Y.Label.Text = "fraction of VMIs running"
	p.Y.Min, p.Y.Max = 0, 1.3 // headroom for the legend
	p.Add(plotter.NewGrid())
	palette := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	}
	for i, r := range rs {
		l, err := plotter.NewLine(benchkit.CDF(r.latencies))
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(2)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%d VMIs", r.n), l)
	}
	p.Legend.Top, p.Legend.Left = true, true
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}
