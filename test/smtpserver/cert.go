package smtpserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"sync"
	"time"
)

// testCert is a self-signed certificate for 127.0.0.1 and localhost, the
// servers' TLS identity; a client trusts it through RootCAs.
type testCert struct {
	tls     tls.Certificate
	certPEM []byte
	keyPEM  []byte
	pool    *x509.CertPool
}

// certificate makes the process's one test certificate.
var certificate = sync.OnceValues(func() (*testCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "userd test SMTP server"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &testCert{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		pool:    x509.NewCertPool(),
	}
	if c.tls, err = tls.X509KeyPair(c.certPEM, c.keyPEM); err != nil {
		return nil, err
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c.pool.AddCert(parsed)
	return c, nil
})

// RootCAs trusts the certificate the test servers present (for
// mail.Options.TLSConfig).
func RootCAs() *x509.CertPool {
	c, err := certificate()
	if err != nil {
		panic(err) // generating a key and signing with it does not fail
	}
	return c.pool
}
