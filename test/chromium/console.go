package chromium

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
)

// consoleLog keeps what the pages of a tab write to the console, from the
// start of the browser on, until a test takes it.
type consoleLog struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
	err  error         // the end of the subscription, once it ended
	more chan struct{} // closed, and replaced, at each new message
	// expected are the statuses of the documents that the test loaded
	// and checked, by URL: the browser logs an error for a document of
	// status 400 or more, which the test asked for.
	expected map[string]int
}

// watchConsole subscribes to the console of ctx's tab for as long as ctx
// lives.
func watchConsole(ctx context.Context) *consoleLog {
	c := &consoleLog{more: make(chan struct{}), expected: map[string]int{}}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			c.mu.Lock()
			if err != nil {
				c.err = err
			} else {
				c.msgs = append(c.msgs, m)
			}
			close(c.more)
			c.more = make(chan struct{})
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return c
}

// expect notes that the document at url was loaded with status, which the
// test checks itself.
func (c *consoleLog) expect(url string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expected[url] = status
}

// barriers numbers the barriers of every tab.
var barriers atomic.Int64

// take returns the messages written so far and forgets them. "So far" is
// made exact with a barrier: the browser sends the messages of a tab in
// order, so once a message that the test itself writes has arrived,
// every message the page wrote before it has arrived too (a refusal of
// the Content-Security-Policy is written as the page loads).
func (c *consoleLog) take(ctx context.Context) ([]chromedp.ConsoleMessage, error) {
	barrier := fmt.Sprintf("userd-chromium-barrier-%d", barriers.Add(1))
	if _, err := evaluate[chromedp.Void](ctx, fmt.Sprintf("console.debug(%q)", barrier)); err != nil {
		return nil, fmt.Errorf("write the console barrier: %w", err)
	}
	for {
		c.mu.Lock()
		for i, m := range c.msgs {
			if m.Type == chromedp.ConsoleDebug && m.Text == barrier {
				got := c.msgs[:i:i]
				c.msgs = append([]chromedp.ConsoleMessage(nil), c.msgs[i+1:]...)
				c.mu.Unlock()
				return got, nil
			}
		}
		more, err := c.more, c.err
		c.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("the console: %w", err)
		}
		select {
		case <-more:
		case <-ctx.Done():
			return nil, fmt.Errorf("the console barrier did not arrive: %w", ctx.Err())
		}
	}
}

// reported tells whether m is a message a check looks at: an error, a
// warning or an uncaught exception.
func reported(m chromedp.ConsoleMessage) bool {
	return m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException()
}

// expectedError tells whether m is an error that the browser writes by
// itself about a request the test made on purpose: a document of an
// error status that the test checked (a form sent back with its field's
// error is a 400), or the /favicon.ico that the browser asks for and
// userd does not serve.
func (c *consoleLog) expectedError(m chromedp.ConsoleMessage) bool {
	if m.Source != "network" {
		return false
	}
	if strings.HasSuffix(m.URL, "/favicon.ico") && strings.Contains(m.Text, "status of 404") {
		return true
	}
	c.mu.Lock()
	status, ok := c.expected[m.URL]
	c.mu.Unlock()
	return ok && strings.Contains(m.Text, fmt.Sprintf("status of %d ", status))
}

// ConsoleMessages returns the errors, warnings and uncaught exceptions
// that the pages of b's tab wrote to the console since the browser
// started or since the last call of ConsoleMessages or CheckConsole, all
// of them, expected or not.
func (b *Browser) ConsoleMessages(t testing.TB) []chromedp.ConsoleMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	msgs, err := b.console.take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []chromedp.ConsoleMessage
	for _, m := range msgs {
		if reported(m) {
			out = append(out, m)
		}
	}
	return out
}

// CheckConsole fails t for each error, warning or uncaught exception
// that the pages of b's tab wrote to the console since the browser
// started or since the last call of ConsoleMessages or CheckConsole: a
// refusal of the Content-Security-Policy, a stylesheet or an image that
// did not load, a script's error. The browser's own errors about a
// document whose error status the test checked (Open, Submit) and about
// /favicon.ico are expected.
func (b *Browser) CheckConsole(t testing.TB) {
	t.Helper()
	for _, m := range b.ConsoleMessages(t) {
		if !b.console.expectedError(m) {
			t.Errorf("the browser's console: %s (%s, source %q)", m, m.URL, m.Source)
		}
	}
}
