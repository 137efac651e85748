package web

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"

	"github.com/boombuler/barcode/qr"
)

// The geometry of TOTPQRCode's image. A module of 6 pixels keeps a code of
// an otpauth URI (version 6 to 8, 41 to 49 modules) between 300 and 350
// pixels wide, which a phone's camera reads off a screen at arm's length;
// the quiet zone of 4 modules is what ISO/IEC 18004 asks for, and lets a
// reader find the code on a page of any background, the dark scheme's too.
const (
	qrModulePixels = 6
	qrQuietModules = 4
)

// TOTPQRCode renders uri (an otpauth URI) as a QR code, a two-colour PNG,
// black on white, with error correction level M, as authenticator apps
// expect to scan it. Each module is a square of whole pixels (no scaling
// that would make some modules wider than others).
func TOTPQRCode(uri string) ([]byte, error) {
	code, err := qr.Encode(uri, qr.M, qr.Auto)
	if err != nil {
		return nil, fmt.Errorf("qr code: %w", err)
	}
	n := code.Bounds().Dx()
	side := (n + 2*qrQuietModules) * qrModulePixels
	img := image.NewPaletted(image.Rect(0, 0, side, side), color.Palette{color.White, color.Black})
	// Index 0 is white: the new image is all quiet zone.
	for y := range n {
		for x := range n {
			if color.GrayModel.Convert(code.At(x, y)).(color.Gray).Y >= 128 {
				continue
			}
			x0, y0 := (x+qrQuietModules)*qrModulePixels, (y+qrQuietModules)*qrModulePixels
			for dy := range qrModulePixels {
				row := img.Pix[(y0+dy)*img.Stride+x0:]
				for dx := range qrModulePixels {
					row[dx] = 1
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("qr code png: %w", err)
	}
	return buf.Bytes(), nil
}
