// Package sender is the benchmark traffic source: an AF_PACKET socket that transmits batches of
// prebuilt minimum-size UDP/IPv4 frames with sendmmsg(2), in one flow or several, from a goroutine
// locked to an OS thread (pinned to a CPU when asked) until it is stopped, counting the frames the
// kernel accepted. Every receive benchmark in this module is fed by it, so receivers are compared under
// the same load.
//
// The frames are addressed to 02:00:00:00:00:02, a MAC no interface has, so a kernel stack that sees
// them drops them early (PACKET_OTHERHOST) and answers nothing.
package sender

import (
	"encoding/binary"
	"errors"
)

// Config shapes the traffic. The zero value is one flow of 60-byte frames in batches of 64.
type Config struct {
	Flows int // distinct UDP flows (source ports 10000, 10001, ...); default 1
	Batch int // frames per sendmmsg call; default 64
	Size  int // frame length without FCS, at least 42; default 60
	CPU   int // CPU to pin the sending thread to, or -1 for none (the zero value pins to CPU 0)
}

// ErrBadConfig is returned for an invalid Config.
var ErrBadConfig = errors.New("sender: invalid config")

func (c *Config) defaults() (Config, error) {
	var r Config
	if c != nil {
		r = *c
	}
	if r.Flows == 0 {
		r.Flows = 1
	}
	if r.Batch == 0 {
		r.Batch = 64
	}
	if r.Size == 0 {
		r.Size = 60
	}
	if r.Flows < 0 || r.Flows > 50000 || r.Batch < 0 || r.Batch > 1024 || r.Size < 42 || r.Size > 9000 {
		return r, ErrBadConfig
	}
	return r, nil
}

// Frame builds the UDP/IPv4 frame of the given flow: 198.18.0.1:(10000+flow) → 198.18.0.2:9, with a
// correct IPv4 header checksum, zero UDP checksum and zero padding up to size bytes.
func Frame(flow, size int) []byte {
	b := make([]byte, size)
	copy(b[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(b[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:14], 0x0800)
	ip := b[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:4], uint16(size-14))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:16], []byte{198, 18, 0, 1})
	copy(ip[16:20], []byte{198, 18, 0, 2})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:12], ^uint16(sum))
	udp := b[34:42]
	binary.BigEndian.PutUint16(udp[0:2], uint16(10000+flow))
	binary.BigEndian.PutUint16(udp[2:4], 9)
	binary.BigEndian.PutUint16(udp[4:6], uint16(size-34))
	return b
}
