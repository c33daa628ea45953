package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// writePlots writes the PNGs for the scenarios that ran and returns their paths.
func writePlots(res *results, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: plots for people to read (docs/), with the mode of the repository's other directories
		return nil, err
	}
	var files []string
	save := func(p *plot.Plot, w, h vg.Length, name string) error {
		f := filepath.Join(dir, name)
		if err := p.Save(w, h, f); err != nil {
			return err
		}
		files = append(files, f)
		return nil
	}
	if len(res.uncontended) > 0 {
		f := filepath.Join(dir, "bench-uncontended.png")
		if err := latencyBars(withoutAgent(res.uncontended), "Uncontended acquire+release", f); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(res.handoff) > 0 {
		rows := shownHandoff(res.handoff)
		p, err := handoffLines(rows, fmt.Sprintf("Hand-off latency p50 on one key, hold %v (lower is better)", res.settings.hold), "hand-off p50 (µs)",
			func(r row) float64 { return micros(r.Lat.P50) }, false)
		if err != nil {
			return nil, err
		}
		if err := save(p, 10*vg.Inch, 6*vg.Inch, "bench-handoff.png"); err != nil {
			return nil, err
		}
		p, err = handoffLines(rows, fmt.Sprintf("Hand-off throughput on one key, hold %v (higher is better)", res.settings.hold), "acquisitions per second",
			func(r row) float64 { return r.Run.Throughput() }, true)
		if err != nil {
			return nil, err
		}
		if err := save(p, 10*vg.Inch, 6*vg.Inch, "bench-handoff-throughput.png"); err != nil {
			return nil, err
		}
	}
	if len(res.processes) > 0 {
		for _, pl := range []struct {
			file, title, ylabel string
			y                   func(row) float64
		}{
			{"bench-processes.png", "Hand-off latency p50 between processes, one key, hold %v (lower is better)", "hand-off p50 (µs)",
				func(r row) float64 { return micros(r.Lat.P50) }},
			{"bench-processes-commands.png", "Redis commands per acquisition between processes, hold %v (lower is better)", "Redis commands per acquisition",
				func(r row) float64 { return r.CommandsPerOp() }},
		} {
			p, err := contendedLines(withoutAgent(res.processes), "worker processes", fmt.Sprintf(pl.title, res.settings.hold), pl.ylabel, pl.y, false)
			if err != nil {
				return nil, err
			}
			if err := save(p, 10*vg.Inch, 6*vg.Inch, pl.file); err != nil {
				return nil, err
			}
		}
	}
	if len(res.redlock) > 0 {
		f := filepath.Join(dir, "bench-redlock.png")
		if err := latencyBars(res.redlock, fmt.Sprintf("Redlock over %d nodes, acquire+release", res.settings.redlockNodes), f); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(res.held) > 0 {
		p, err := heldBars(res)
		if err != nil {
			return nil, err
		}
		if err := save(p, 8*vg.Inch, 5*vg.Inch, "bench-held.png"); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// latencyBars draws two panels, p50 on top and p99 below, each with a bar
// per concurrency level for every library.
func latencyBars(rows []row, title, file string) error {
	var names []string
	for _, r := range rows {
		if r.Level == rows[0].Level {
			names = append(names, r.Name)
		}
	}
	lvls := levels(rows)
	const width = 22
	var panels [][]*plot.Plot
	for _, q := range []string{"p50", "p99"} {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s — %s latency (lower is better)", title, q)
		p.Y.Label.Text = q + " (µs)"
		for i, lv := range lvls {
			vals := make(plotter.Values, len(names))
			for j, name := range names {
				if r := findRow(rows, lv, name); r != nil {
					if q == "p50" {
						vals[j] = micros(r.Lat.P50)
					} else {
						vals[j] = micros(r.Lat.P99)
					}
				}
			}
			bars, err := plotter.NewBarChart(vals, vg.Points(width))
			if err != nil {
				return err
			}
			bars.LineStyle.Width = vg.Length(0)
			bars.Color = plotutil.Color(i)
			bars.Offset = vg.Points(width * (float64(i) - float64(len(lvls)-1)/2))
			p.Add(bars)
			p.Legend.Add(fmt.Sprintf("%d goroutine(s)", lv), bars)
		}
		p.Legend.Top = true
		p.Legend.Left = true
		p.NominalX(names...)
		p.Add(plotter.NewGrid())
		panels = append(panels, []*plot.Plot{p})
	}
	const w, h = 10 * vg.Inch, 8 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	canvases := plot.Align(panels, draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}, dc)
	for i := range panels {
		panels[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(file) //nolint:gosec // G304: a file in the -plots directory the user named
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}

// handoffLines plots one line per library over the worker counts.
// The legend goes top left, or bottom left with legendBottom (throughput
// lines crowd the top).
func handoffLines(rows []row, title, ylabel string, y func(row) float64, legendBottom bool) (*plot.Plot, error) {
	return contendedLines(rows, "workers", title, ylabel, y, legendBottom)
}

// contendedLines is handoffLines over levels that count what xName says.
func contendedLines(rows []row, xName, title, ylabel string, y func(row) float64, legendBottom bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xName + " (log scale)"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, lv := range levels(rows) {
		ticks = append(ticks, plot.Tick{Value: float64(lv), Label: strconv.Itoa(lv)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = 0
	// A line per library name; the best tuned variant of a peer may differ
	// between worker counts, so tuned rows are drawn as one line per group.
	type series struct {
		label string
		pts   plotter.XYs
	}
	var order []string
	lines := map[string]*series{}
	for _, r := range rows {
		key, label := r.Name, r.Name
		if r.Variant != "" {
			key, label = r.Variant, r.Variant+" (best variant)"
		}
		s := lines[key]
		if s == nil {
			s = &series{label: label}
			lines[key] = s
			order = append(order, key)
		}
		if v := y(r); v > 0 {
			s.pts = append(s.pts, plotter.XY{X: float64(r.Level), Y: v})
		}
	}
	for i, k := range order {
		s := lines[k]
		if len(s.pts) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(2)
		l.Dashes = plotutil.Dashes(i % 3)
		pts.Color = plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(s.label, l, pts)
	}
	p.Legend.Top = !legendBottom
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p, nil
}

// heldBars shows the process CPU each library spent keeping the leases alive.
func heldBars(res *results) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%d held leases, renewed every %v: client CPU (lower is better)", res.settings.leases, res.settings.heldRenew)
	p.Y.Label.Text = "process CPU (% of one core)"
	var names []string
	vals := make(plotter.Values, len(res.held))
	for i, r := range res.held {
		names = append(names, r.Name)
		vals[i] = 100 * r.CPUCores()
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(40))
	if err != nil {
		return nil, err
	}
	bars.LineStyle.Width = vg.Length(0)
	bars.Color = color.RGBA{R: 60, G: 110, B: 180, A: 255}
	p.Add(bars)
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: barTops(vals), Labels: percentLabels(vals)})
	if err != nil {
		return nil, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].XAlign = draw.XCenter
	}
	p.Add(labels)
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	return p, nil
}

func barTops(vals plotter.Values) plotter.XYs {
	xys := make(plotter.XYs, len(vals))
	for i, v := range vals {
		xys[i] = plotter.XY{X: float64(i), Y: v}
	}
	return xys
}

func percentLabels(vals plotter.Values) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = fmt.Sprintf("%.1f %%", v)
	}
	return out
}
