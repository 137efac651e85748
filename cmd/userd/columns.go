package main

import (
	"io"
	"strings"
	"text/tabwriter"
)

// columns aligns the tab-separated cells of text into columns, each as
// wide as its widest cell plus padding spaces. Tables are rendered into a
// string first so that a command's output is written, and its error
// checked, in one place.
func columns(text string, padding int) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, padding, ' ', 0)
	// Writes into a strings.Builder cannot fail.
	_, _ = io.WriteString(tw, text)
	_ = tw.Flush()
	return b.String()
}
