package app

import (
	"context"
	"net/netip"

	"github.com/voxhost/voxhost/host/sip"
)

// serveSIP starts the SIP endpoint (sip.listen) until ctx ends; its bound
// address is SIPAddr's once it listens.
func (h *Host) serveSIP(ctx context.Context) error {
	ep, err := sip.New(sip.Options{Config: h.Config.SIP, Server: h.Server, Logger: h.log, Registerer: h.Server.Registerer()})
	if err != nil {
		return err
	}
	ready := make(chan error, 1)
	go func() {
		listening := false
		err := ep.ListenAndServe(ctx, func(addr netip.AddrPort) {
			h.sipAddr.Store(&addr)
			listening = true
			ready <- nil
		})
		if !listening {
			ready <- err
		} else if err != nil {
			h.log.Error("SIP listener failed", "err", err)
		}
	}()
	return <-ready
}

// SIPAddr is the address the SIP endpoint listens on (UDP and TCP), once
// ListenAndServe started it; the zero AddrPort before, or without one.
func (h *Host) SIPAddr() netip.AddrPort {
	if a := h.sipAddr.Load(); a != nil {
		return *a
	}
	return netip.AddrPort{}
}
