package main

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// series is one line of the chart.
type series struct {
	name   string
	color  string
	dashed bool
	points []Point
}

var scenarioColors = map[string]string{
	"read":         "#1f77b4",
	scReadTraced:   "#6baed6",
	scReadUntraced: "#9ecae1",
	"read-many":    "#aec7e8",
	"me":           "#17becf",
	scPATRead:      "#dbdb8d",
	"list":         "#9467bd",
	"create":       "#8c564b",
	"login":        "#d62728",
	"refresh":      "#2ca02c",
	"mixed":        "#ff7f0e",
	"mfa":          "#e377c2",
	"passkey":      "#bcbd22",

	scOIDCFlow:              "#393b79",
	scOIDCCodeExchange:      "#637939",
	scOIDCRefresh:           "#98df8a",
	scOIDCClientCredentials: "#8c6d31",
	scOIDCUserInfo:          "#7b4173",
}

// chartSVG draws two panels, req/s and p99 latency against concurrency,
// one line per scenario and the bare handler dashed, both on log scales.
func chartSVG(r *Report) string {
	var ss []series
	for _, name := range r.Settings.Scenarios {
		s := series{name: name, color: scenarioColors[name]}
		for _, p := range r.Results {
			if p.Scenario == name {
				s.points = append(s.points, p)
			}
		}
		if len(s.points) > 0 {
			ss = append(ss, s)
		}
	}
	if r.Reference != nil && len(r.Reference.Bare) > 0 {
		ss = append(ss, series{name: "bare net/http (reference)", color: "#555555", dashed: true, points: r.Reference.Bare})
	}
	var hashRate float64
	if r.Reference != nil {
		hashRate = r.Reference.HashesPerSec
	}

	const width, height = 980, 480
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	m := r.Machine
	commit := m.Commit
	if m.Dirty {
		commit += "+dirty"
	}
	text(&b, 20, 26, "start", 16, "bold", fmt.Sprintf("userd load test — %s", r.Backend))
	text(&b, 20, 46, "start", 12, "", fmt.Sprintf("%d cores (%s) · %s %s/%s · userd %s · %s",
		m.Cores, m.CPUModel, m.GoVersion, m.GOOS, m.GOARCH, commit, r.StartedAt.Format(time.RFC3339)))
	points := len(r.Results)
	if r.Reference != nil {
		points += len(r.Reference.Bare)
	}
	text(&b, 20, 63, "start", 12, "", fmt.Sprintf("%v per point after %v warm-up · closed-loop workers, loader on the same cores · %d users seeded · %d of %d points taken while other processes used > %.2f cores",
		seconds(r.Settings.DurationSeconds), seconds(r.Settings.WarmupSeconds), r.Settings.Users, r.noisyPoints(), points, noisyCores))

	levels := slices.Clone(r.Settings.Concurrency)
	slices.Sort(levels)
	levels = slices.Compact(levels)
	top, bottom := 100.0, 370.0
	rps := func(p Point) float64 { return p.RPS }
	p99 := func(p Point) float64 { return p.P99 }
	var extra []float64
	if hashRate > 0 {
		extra = append(extra, hashRate)
	}
	panel(&b, 75, 455, top, bottom, "throughput (req/s, log scale)", levels, ss, rps, extra, hashRate)
	panel(&b, 575, 955, top, bottom, "p99 latency (ms, log scale)", levels, ss, p99, nil, 0)

	// Legend, below the panels.
	x, y := 75.0, 428.0
	for _, s := range ss {
		w := 46 + 7*float64(len(s.name))
		if x+w > width-20 {
			x, y = 75, y+20
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`+"\n", x, y-4, x+26, y-4, s.color, dash)
		text(&b, x+32, y, "start", 12, "", s.name)
		x += w
	}
	if hashRate > 0 {
		if x+260 > width-20 {
			x, y = 75, y+20
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-width="1.5" stroke-dasharray="2,3"/>`+"\n", x, y-4, x+26, y-4)
		text(&b, x+32, y, "start", 12, "", fmt.Sprintf("raw argon2id hash rate (%.0f/s)", hashRate))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// panel draws one chart: axes, decade grid lines, and a line per series of
// value(p) against concurrency (log2 spacing).
func panel(b *strings.Builder, x0, x1, top, bottom float64, title string, levels []int, ss []series, value func(Point) float64, extra []float64, hline float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.points {
			if v := value(p); v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	for _, v := range extra {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 0) {
		lo, hi = 1, 10
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	yOf := func(v float64) float64 {
		return bottom - (math.Log10(v)-dlo)/(dhi-dlo)*(bottom-top)
	}
	minL, maxL := math.Log2(float64(levels[0])), math.Log2(float64(levels[len(levels)-1]))
	pad := 30.0
	xOf := func(c int) float64 {
		if maxL == minL {
			return (x0 + x1) / 2
		}
		return x0 + pad + (math.Log2(float64(c))-minL)/(maxL-minL)*(x1-x0-2*pad)
	}

	text(b, (x0+x1)/2, top-12, "middle", 13, "bold", title)
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999999"/>`+"\n", x0, top, x1-x0, bottom-top)
	for d := dlo; d <= dhi; d++ {
		y := yOf(math.Pow(10, d))
		if d > dlo && d < dhi {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", x0, y, x1, y)
		}
		text(b, x0-6, y+4, "end", 11, "", decadeLabel(d))
		if d < dhi {
			for _, k := range []float64{2, 5} {
				ym := yOf(k * math.Pow(10, d))
				fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f0f0f0"/>`+"\n", x0, ym, x1, ym)
			}
		}
	}
	for _, c := range levels {
		x := xOf(c)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eeeeee"/>`+"\n", x, top, x, bottom)
		text(b, x, bottom+16, "middle", 11, "", fmt.Sprint(c))
	}
	text(b, (x0+x1)/2, bottom+32, "middle", 12, "", "concurrency (closed-loop workers)")
	if hline > 0 {
		y := yOf(hline)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-width="1.5" stroke-dasharray="2,3"/>`+"\n", x0, y, x1, y)
	}
	for _, s := range ss {
		var pts []string
		for _, p := range s.points {
			if v := value(p); v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(p.Concurrency), yOf(v)))
			}
		}
		if len(pts) == 0 {
			continue
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		for _, p := range s.points {
			if v := value(p); v > 0 {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>`, xOf(p.Concurrency), yOf(v), s.color)
				escape(b, fmt.Sprintf("%s c=%d: %.1f req/s, p99 %.2f ms", s.name, p.Concurrency, p.RPS, p.P99))
				b.WriteString("</title></circle>\n")
			}
		}
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func decadeLabel(d float64) string {
	v := math.Pow(10, d)
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	default:
		return fmt.Sprintf("%g", v)
	}
}

func text(b *strings.Builder, x, y float64, anchor string, size int, weight, s string) {
	fw := ""
	if weight != "" {
		fw = fmt.Sprintf(` font-weight="%s"`, weight)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d"%s fill="#222222">`, x, y, anchor, size, fw)
	escape(b, s)
	b.WriteString("</text>\n")
}

func escape(b *strings.Builder, s string) {
	_ = xml.EscapeText(b, []byte(s))
}
