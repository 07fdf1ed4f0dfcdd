//go:build linux

package blitzio_test

import (
	"fmt"
	"net"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// udpEcho answers one datagram with the AddrPort poll forms, the allocation-free way
// to write a UDP server as a hand-written future.
type udpEcho struct {
	c       *blitzio.UDPConn
	buf     [64]byte
	got     blitzio.AddrPortDatagram
	sending bool
}

func (u *udpEcho) Poll(cx *blitzio.Context) (error, bool) {
	if !u.sending {
		r, ok := u.c.PollRecvFromAddrPort(cx, u.buf[:])
		if !ok {
			return nil, false // waiting for a datagram; cx's waker is registered
		}
		if r.Err != nil {
			return r.Err, true
		}
		u.got, u.sending = r.Value, true
	}
	r, ok := u.c.PollSendToAddrPort(cx, u.buf[:u.got.N], u.got.From)
	if !ok {
		return nil, false
	}
	return r.Err, true
}

func ExampleUDPConn_PollRecvFromAddrPort() {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	srv, err := blitzio.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	h := blitzio.Spawn(rt, &udpEcho{c: srv})

	client, err := net.DialUDP("udp4", nil, srv.UDPAddr())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	client.SetReadDeadline(time.Now().Add(10 * time.Second)) // never hang on a lost datagram
	client.Write([]byte("ping"))
	buf := make([]byte, 16)
	n, _ := client.Read(buf)
	serr, err := h.Wait()
	fmt.Println(string(buf[:n]), serr, err)
	// Output: ping <nil> <nil>
}
