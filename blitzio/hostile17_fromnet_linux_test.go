//go:build linux

package blitzio

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestHostile17UnixListenerFromNetRefused: a listener that UnixListenerFromNet refuses
// (here a "unixpacket" one, not a stream socket) is left as it was, its owner's: its
// Close still removes its socket file, as net's does. Before, UnixListenerFromNet
// turned the removal off before it checked the socket, so a refused listener left its
// file behind, and the next net.ListenUnix on the path failed with "address already
// in use".
func TestHostile17UnixListenerFromNetRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h17.sock")
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Skipf("unixpacket: %v", err)
	}
	if ul, err := UnixListenerFromNet(l); err == nil {
		ul.Close()
		t.Fatal("UnixListenerFromNet took a unixpacket listener")
	}
	if err := l.Close(); err != nil {
		t.Fatalf("the refused listener's Close: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused listener's socket file after its Close: %v, want it removed as net's Close does", err)
	}
	l2, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listening again on the path: %v", err)
	}
	l2.Close()
}
