package benchkit

import (
	"slices"

	"gonum.org/v1/plot/plotter"
)

// CDF is the step function of the empirical distribution of xs, for a plot.
func CDF(xs []float64) plotter.XYs {
	s := slices.Clone(xs)
	slices.Sort(s)
	pts := make(plotter.XYs, 0, 2*len(s)+1)
	pts = append(pts, plotter.XY{X: 0, Y: 0})
	for i, x := range s {
		pts = append(pts, plotter.XY{X: x, Y: float64(i) / float64(len(s))}, plotter.XY{X: x, Y: float64(i+1) / float64(len(s))})
	}
	return pts
}
