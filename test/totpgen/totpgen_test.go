package totpgen_test

import (
	"testing"
	"time"

	"github.com/userd/userd/test/totpgen"
)

// TestCode_rfc6238_vectors checks the generator against the SHA-1 test
// vectors of RFC 6238, appendix B (8 digits there; the last 6 here).
func TestCode_rfc6238_vectors(t *testing.T) {
	t.Parallel()
	// "12345678901234567890" in base32.
	const secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
	for _, c := range []struct {
		at   int64
		want string
	}{{59, "287082"}, {1111111109, "081804"}, {1111111111, "050471"}, {1234567890, "005924"}, {2000000000, "279037"}, {20000000000, "353130"}} {
		got, err := totpgen.Code(secret, time.Unix(c.at, 0))
		if err != nil || got != c.want {
			t.Errorf("at %d: %q, %v; want %q", c.at, got, err, c.want)
		}
	}
	if _, err := totpgen.Code("not base32!", time.Now()); err == nil {
		t.Error("a secret that is not base32 was taken")
	}
}
