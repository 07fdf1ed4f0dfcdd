package stress

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"golang.org/x/net/nettest"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/stream"
)

// TestConnAdapterNettestDuplex runs Go's net.Conn conformance suite (nettest.TestConn:
// basic I/O, ping-pong, racy reads and writes, read and write timeouts, past, present and
// future deadlines, Close unblocking, concurrent methods) over stream.NewConn adapting
// the two ends of an in-memory stream.Duplex. The same adapter serves TCP and Unix
// streams; this run checks the adapter's own half of the contract.
func TestConnAdapterNettestDuplex(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		a, b := stream.Duplex(64 << 10)
		c1, c2 = stream.NewConn(a), stream.NewConn(b)
		return c1, c2, func() { c1.Close(); c2.Close() }, nil
	})
}

// tcpAdapterPipe returns the two ends of a loopback TCP connection made by blitzio on
// rt, both seen through the net.Conn adapter: the server end from the net.Listener
// adapter's Accept, the client end from a dialled blitzio.TCPStream.
func tcpAdapterPipe(t *testing.T, rt *blitzio.Runtime) (server, client net.Conn, err error) {
	t.Helper()
	l, err := blitzio.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, nil, err
	}
	ln := stream.NewTCPListener(rt, l)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	acceptErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			acceptErr <- err
			return
		}
		accepted <- c
	}()
	d, err := blitzio.BlockOn(rt, blitzio.Dial("tcp4", ln.Addr().String()))
	if err == nil {
		err = d.Err
	}
	if err != nil {
		return nil, nil, err
	}
	select {
	case c := <-accepted:
		return c, stream.NewConn(d.Value), nil
	case err := <-acceptErr:
		return nil, nil, err
	case <-time.After(20 * time.Second):
		return nil, nil, errors.New("watchdog: the listener adapter accepted nothing in 20s")
	}
}

// TestConnAdapterNettestTCP runs nettest.TestConn over real blitzio TCP connections
// through the net.Conn and net.Listener adapters, once per Linux backend.
func TestConnAdapterNettestTCP(t *testing.T) {
	for _, b := range []blitzio.Backend{blitzio.BackendIOUring, blitzio.BackendEpoll} {
		t.Run(b.String(), func(t *testing.T) {
			rt, err := blitzio.New(blitzio.Config{Workers: 2, Backend: b})
			if err != nil {
				if errors.Is(err, blitzio.ErrBackendUnavailable) {
					t.Skipf("%v unavailable here: %v", b, err)
				}
				t.Fatal(err)
			}
			defer rt.Close()
			nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
				c1, c2, err = tcpAdapterPipe(t, rt)
				if err != nil {
					return nil, nil, nil, err
				}
				return c1, c2, func() { c1.Close(); c2.Close() }, nil
			})
		})
	}
}

// TestTLSOverConnAdapter runs crypto/tls's server over the adapter: a TLS echo between
// a tls.Server on a blitzio connection and a tls.Client on the other end.
func TestTLSOverConnAdapter(t *testing.T) {
	rt, err := blitzio.New(blitzio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	cert := selfSignedCert(t)
	srv, cli, err := tcpAdapterPipe(t, rt)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		s := tls.Server(srv, &tls.Config{Certificates: []tls.Certificate{cert}})
		defer s.Close()
		_, err := io.Copy(s, s) // echo until the client closes
		done <- err
	}()
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	c := tls.Client(cli, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	c.SetDeadline(time.Now().Add(30 * time.Second))
	msg := bytes.Repeat([]byte("secret blitzio payload "), 5000)
	go func() {
		c.Write(msg)
		c.CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the TLS echo: %v", err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("TLS echo returned %d bytes, want the %d sent", len(got), len(msg))
	}
	if st := c.ConnectionState(); !st.HandshakeComplete || st.Version < tls.VersionTLS12 {
		t.Fatalf("handshake state %+v", st)
	}
	c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("TLS server: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watchdog: the TLS server did not finish")
	}
}

// selfSignedCert makes a certificate for "localhost" valid for an hour.
func selfSignedCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}
