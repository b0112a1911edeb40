// Package codec converts between G.711 μ-law and PCM16LE for the host's audio
// path. Both directions write into buffers the caller owns, because the host
// decodes straight into views of WebAssembly guest memory and a per-frame
// allocation there would be garbage on every 20 ms frame.
//
// PCM is kept as little-endian bytes, two per sample, rather than []int16:
// that is the layout the guest sees, so no conversion or copy is needed at the
// boundary.
//
// A program that embeds voxhost names the audio of a bot leg with a Format
// (Telephony, or ParseFormat's codec and rate) in host/server's Upstream.
package codec
