package totp_test

import (
	"context"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
)

// oathCode asks oathtool for the code of the URI's secret at a time, with
// the parameters the URI names: what an authenticator app that scanned it
// would show.
func oathCode(t *testing.T, bin string, uri *url.URL, at time.Time) string {
	t.Helper()
	q := uri.Query()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	//nolint:gosec // G204: the test's own oathtool and arguments
	cmd := exec.CommandContext(ctx, bin,
		"--totp="+q.Get("algorithm"), "--digits="+q.Get("digits"), "--time-step-size="+q.Get("period")+"s",
		"--now=@"+strconv.FormatInt(at.Unix(), 10), "--base32", q.Get("secret"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestMatch_oathtool: the codes oathtool makes from the URI NewSecret gives
// are accepted at the current step and one step either way, as the step
// they belong to, and refused two steps away or once their step is used.
// oathtool's codes of the steps around also make the exact expectation: a
// code of another step of the window may equal one by chance (1 in 10^6),
// and Match then answers the later step.
func TestMatch_oathtool(t *testing.T) {
	t.Parallel()
	// OATH Toolkit's oathtool, an independent implementation of RFC 6238.
	bin := kit.Tool(t, "oathtool", "oathtool", "codes are not checked against OATH Toolkit")
	o := newOTP(t)
	for range 5 {
		secret, encoded, raw, err := o.NewSecret("ada@example.com")
		if err != nil {
			t.Fatal(err)
		}
		uri, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		q := uri.Query()
		if q.Get("secret") != encoded || q.Get("algorithm") != "SHA1" || q.Get("digits") != "6" || q.Get("period") != "30" {
			t.Fatalf("uri %s: want secret %s, SHA1, 6 digits, 30 s", raw, encoded)
		}
		now := time.Now()
		cur := domain.TOTPStep(now)
		// codes[d] is the code of a phone whose clock is d steps off ours.
		codes := map[int64]string{}
		for d := int64(-2); d <= 2; d++ {
			codes[d] = oathCode(t, bin, uri, now.Add(time.Duration(d)*domain.TOTPPeriod))
		}
		// want is the latest step of the window after `after` whose code
		// is code, by oathtool.
		want := func(code string, after int64) (int64, bool) {
			for d := int64(domain.TOTPSkewSteps); d >= -domain.TOTPSkewSteps; d-- {
				if cur+d > after && codes[d] == code {
					return cur + d, true
				}
			}
			return 0, false
		}
		for d := int64(-2); d <= 2; d++ {
			inWindow := d >= -domain.TOTPSkewSteps && d <= domain.TOTPSkewSteps
			wantStep, wantOK := want(codes[d], 0)
			if inWindow && (!wantOK || wantStep < cur+d) || !inWindow && wantOK {
				t.Fatalf("the expectation is wrong: step now%+d gives %d, %v", d, wantStep, wantOK)
			}
			if got, ok := o.Match(secret, codes[d], now, 0); got != wantStep || ok != wantOK {
				t.Errorf("oathtool's code %s of step now%+d: Match = %d, %v; want %d, %v", codes[d], d, got, ok, wantStep, wantOK)
			}
			// Once its step is used, the code is refused.
			wantStep, wantOK = want(codes[d], cur+d)
			if got, ok := o.Match(secret, codes[d], now, cur+d); got != wantStep || ok != wantOK {
				t.Errorf("oathtool's code %s of step now%+d after that step: Match = %d, %v; want %d, %v", codes[d], d, got, ok, wantStep, wantOK)
			}
		}
	}
}
