package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/userd/userd/application"
)

// progress shows how a long operation advances on w: a bar redrawn in
// place on a terminal ("\rchecking [#####     ] 2500/10000"), plain lines
// at every tenth otherwise (a log file, CI) and at least every
// plainInterval.
type progress struct {
	w    io.Writer
	bar  bool
	now  func() time.Time
	last time.Time
	// phase is the phase being shown; open is true while a bar line waits
	// for its newline.
	phase application.ImportPhase
	open  bool
	// nextTenth is the next tenth of the phase that prints a plain line.
	nextTenth int
}

const (
	barWidth       = 30
	barRedrawEvery = 100 * time.Millisecond
	plainInterval  = 5 * time.Second
)

func newProgress(w io.Writer) *progress {
	return &progress{w: w, bar: isTerminal(w), now: time.Now}
}

// isTerminal reports whether w is a character device, other than with
// TERM=dumb, where a carriage return does not redraw.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// update shows p; it is called from one goroutine.
func (pr *progress) update(p application.ImportProgress) {
	now := pr.now()
	if p.Phase != pr.phase {
		pr.done()
		pr.phase, pr.nextTenth, pr.last = p.Phase, 1, time.Time{}
	}
	complete := p.Done >= p.Total
	if pr.bar {
		if !complete && now.Sub(pr.last) < barRedrawEvery {
			return
		}
		filled := barWidth
		if p.Total > 0 {
			filled = barWidth * p.Done / p.Total
		}
		pr.printf("\r%-8s [%s%s] %d/%d", p.Phase, strings.Repeat("#", filled), strings.Repeat(" ", barWidth-filled), p.Done, p.Total)
		pr.open, pr.last = true, now
		if complete {
			pr.done()
		}
		return
	}
	tenth := 10
	if p.Total > 0 {
		tenth = 10 * p.Done / p.Total
	}
	if pr.nextTenth > 10 {
		return // complete, shown already
	}
	if tenth < pr.nextTenth && !pr.last.IsZero() && now.Sub(pr.last) < plainInterval {
		return
	}
	pct := 100
	if p.Total > 0 {
		pct = 100 * p.Done / p.Total
	}
	pr.printf("%s %d/%d (%d%%)\n", p.Phase, p.Done, p.Total, pct)
	pr.last = now
	pr.nextTenth = max(pr.nextTenth, tenth+1)
}

// done ends a bar line that is still open.
func (pr *progress) done() {
	if pr.open {
		pr.printf("\n")
		pr.open = false
	}
}

// printf writes to w. The progress is for a person watching; a write that
// fails loses nothing the operation needs, so its error is ignored.
func (pr *progress) printf(format string, a ...any) {
	_, _ = fmt.Fprintf(pr.w, format, a...)
}
