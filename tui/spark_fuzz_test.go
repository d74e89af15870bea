package tui

import (
	"fmt"
	"math"
	"testing"
)

// No series, however odd, makes the sparkline panic: a console that ran
// for an hour died in renderSpark on a value pattern its tests never had.
func TestRenderSparkOddValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	patterns := map[string][]float64{
		"one value":       {nan, nan, nan, 5},
		"all zero":        {0, 0, 0, 0},
		"negative":        {-3, -1, -2, -5},
		"negative spike":  {1, 2, -1e9, 3},
		"infinity":        {1, inf, 2},
		"minus infinity":  {1, math.Inf(-1), 2},
		"tiny":            {1e-12, 2e-12, 3e-12},
		"huge":            {1e15, 2e15, 3e15},
		"single":          {7},
		"mixed nan":       {nan, 1, nan, 2, nan},
		"long flat":       make([]float64, 720),
		"negative in nan": {nan, -0.5, nan},
		"gone quiet":      append([]float64{0.2, 0.1}, nanTail(40)...),
		// A source that has only just started (Prometheus after the direct
		// scrape): a value or two among NaNs, lost when the series is
		// stretched to the pane's width.
		"lone value":  append(append(nanTail(30), 5), nanTail(30)...),
		"fresh start": append(append(nanTail(57), 0.1, 0.2), nanTail(2)...),
	}
	for name, values := range patterns {
		for _, w := range []int{6, 10, 20, 38, 60} {
			for _, h := range []int{2, 3, 5, 9} {
				t.Run(fmt.Sprintf("%s %dx%d", name, w, h), func(t *testing.T) {
					s := spark{title: "x", values: values, unit: func(v float64) string { return fmt.Sprintf("%.0f", v) }, limit: 1}
					renderSpark(NewTheme(false), s, w, h, func(w int) string { return "" })
					renderSpark(NewTheme(false), s, w, h, nil)
				})
			}
		}
	}
}

func nanTail(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}
