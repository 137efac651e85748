package webhook

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// The receiver runs on the operator's networks, loopback and private ones
// included, so those stay allowed. What is refused is an address no
// receiver has: a link-local one (169.254.0.0/16 and fe80::/10, where a
// cloud's metadata service answers and hands out the instance's
// credentials), or an unspecified one (0.0.0.0/8 and ::, which a
// connection takes for this host). CheckURL refuses such a host at the
// start; the sender's dialer refuses a connection to such an address
// whatever name led to it (a host name whose DNS answer is
// 169.254.169.254).

// refusedAddr says why the sender never connects to a, or "" when it may.
// An IPv4-mapped IPv6 address (::ffff:169.254.169.254) is judged as the
// IPv4 address it carries, which is where it leads.
func refusedAddr(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "a link-local address (where cloud metadata services answer)"
	case a.IsUnspecified(), a.Is4() && a.As4()[0] == 0:
		return "an unspecified address (which a connection takes for this host)"
	}
	return ""
}

// checkHost refuses a URL's host that is a refused address, or that is a
// number which the system's resolver (getaddrinfo, as inet_aton) reads as
// an IPv4 address: "0", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376"
// or "169.254.43518" all reach 169.254.169.254 or this host there. A host
// name never ends in a number (no top-level domain is one), so such a
// host is refused whatever it would lead to, as the WHATWG URL standard
// reads it as an address too: the address is to be written as four
// decimal numbers, which netip parses and refusedAddr judges.
func checkHost(host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		if why := refusedAddr(a); why != "" {
			if a.Is4In6() {
				why = "that is " + a.Unmap().String() + ", " + why
			}
			return fmt.Errorf("must not point at %s, %s", a, why)
		}
		return nil
	}
	if endsInNumber(host) {
		return fmt.Errorf("host %q is a number that resolvers read as an IPv4 address: write the address as four decimal numbers", host)
	}
	return nil
}

// endsInNumber reports whether the last label of host (a trailing dot
// aside) is a number as inet_aton reads one: decimal digits, or 0x and
// hexadecimal digits (octal is digits too).
func endsInNumber(host string) bool {
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if last == "" && len(labels) > 1 {
		last = labels[len(labels)-2]
	}
	if last == "" {
		return false
	}
	digits := "0123456789"
	if hex, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		last, digits = hex, "0123456789abcdef"
	}
	for _, c := range last {
		if !strings.ContainsRune(digits, c) {
			return false
		}
	}
	return true
}

// guardedTransport is http.DefaultTransport with a dialer that refuses
// the addresses refusedAddr names: its Control sees each address the
// resolver gave, just before the connection is made.
func guardedTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// DefaultTransport's dialer, with the guard.
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: dialControl}
	t.DialContext = d.DialContext
	return t
}

// dialControl refuses a connection to a refused address.
func dialControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("receiver address %q: %w", address, err)
	}
	if why := refusedAddr(ap.Addr()); why != "" {
		return fmt.Errorf("the receiver's host resolves to %s, %s: not connected", ap.Addr(), why)
	}
	return nil
}
