package sip

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// portPool hands out the RTP ports of sip.rtp_port_min..max: an even
// port for RTP and the odd one after it for RTCP, one pair a call.
type portPool struct {
	ip       netip.Addr
	min, max int

	mu    sync.Mutex
	used  map[int]bool
	start int
}

// errNoPorts is a full port range.
var errNoPorts = errors.New("every RTP port of sip.rtp_port_min..max is taken")

func newPortPool(ip netip.Addr, lo, hi int) *portPool {
	lo += lo & 1 // RTP on even ports
	return &portPool{ip: ip, min: lo, max: hi, used: map[int]bool{}, start: lo}
}

// open binds the next free pair and returns its sockets and RTP port. A
// port another program holds is skipped.
func (p *portPool) open() (rtpConn, rtcpConn *net.UDPConn, port int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pairs := (p.max - p.min + 1) / 2
	for i := range pairs {
		port := p.min + (p.start-p.min+2*i)%(2*pairs)
		if p.used[port] {
			continue
		}
		a, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ip, uint16(port))))
		if err != nil {
			continue
		}
		b, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ip, uint16(port+1))))
		if err != nil {
			_ = a.Close()
			continue
		}
		p.used[port] = true
		p.start = port + 2
		return a, b, port, nil
	}
	return nil, nil, 0, fmt.Errorf("%w (%d pairs)", errNoPorts, pairs)
}

func (p *portPool) release(port int) {
	p.mu.Lock()
	delete(p.used, port)
	p.mu.Unlock()
}
