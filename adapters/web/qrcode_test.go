package web_test

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/totp"
	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/test/kit"
)

// totpURIs are otpauth URIs as the TOTP adapter makes them, of a plain and
// of a long issuer and account.
func totpURIs(t *testing.T) []string {
	t.Helper()
	var uris []string
	for _, c := range []struct{ issuer, account string }{
		{"userd", "ada@example.com"},
		{"Bäckerei Müller und Söhne, Kundenkonto", "a.very.long.name+totp-enrolment@subdomain.example-company.co.uk"},
	} {
		o, err := totp.New(c.issuer, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _, uri, err := o.NewSecret(c.account)
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, uri)
	}
	return uris
}

// TestTOTPQRCode_zbarimg reads the QR codes back with zbarimg: each holds
// exactly its URI.
func TestTOTPQRCode_zbarimg(t *testing.T) {
	t.Parallel()
	// ZBar's zbarimg, an independent QR code reader.
	bin := kit.Tool(t, "zbarimg", "zbar-tools", "the QR codes are not read back")
	dir := t.TempDir()
	for i, uri := range totpURIs(t) {
		img, err := web.TOTPQRCode(uri)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "qr"+string(rune('0'+i))+".png")
		if err := os.WriteFile(file, img, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		//nolint:gosec // G204: the test's own zbarimg and file
		out, err := exec.CommandContext(ctx, bin, "--raw", "-q", file).Output()
		cancel()
		if err != nil {
			t.Fatalf("zbarimg %s: %v (%d bytes of PNG for %s)", file, err, len(img), uri)
		}
		if got := strings.TrimSuffix(string(out), "\n"); got != uri {
			t.Errorf("zbarimg read\n%q\nwant\n%q", got, uri)
		}
	}
}

// TestTOTPQRCode_image: a square two-colour PNG, black on white, with a
// white quiet zone of 4 modules (24 pixels) and a black finder pattern
// just inside it.
func TestTOTPQRCode_image(t *testing.T) {
	t.Parallel()
	for _, uri := range totpURIs(t) {
		b, err := web.TOTPQRCode(uri)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r := img.Bounds()
		if r.Dx() != r.Dy() || r.Dx()%6 != 0 || r.Dx() < 250 || r.Dx() > 450 {
			t.Errorf("%dx%d pixels: want a square of whole 6-pixel modules, 250 to 450 wide", r.Dx(), r.Dy())
		}
		gray := func(x, y int) uint8 { return color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y }
		for i := range r.Dx() {
			for _, p := range [][2]int{{i, 0}, {i, 23}, {0, i}, {23, i}, {i, r.Dy() - 1}, {r.Dx() - 1, i}} {
				if gray(p[0], p[1]) != 255 {
					t.Fatalf("pixel %v of the quiet zone is not white", p)
				}
			}
		}
		if gray(24, 24) != 0 || gray(r.Dx()-25, 24) != 0 || gray(24, r.Dy()-25) != 0 {
			t.Error("the finder patterns are not black at the corners inside the quiet zone")
		}
	}
	if _, err := web.TOTPQRCode(strings.Repeat("x", 8000)); err == nil {
		t.Error("a text too long for a QR code: no error")
	}
}
