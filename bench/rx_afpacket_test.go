//go:build linux && cgo

package bench

import (
	"errors"
	"time"

	"github.com/gopacket/gopacket/afpacket"
)

// gopacket/afpacket needs cgo, hence this file's build constraint.
func init() {
	rxCases["gopacket-afpacket"] = func(ifname string) (rxRunner, error) {
		// Its defaults (4 KiB frames, 128 blocks of 512 KiB, 64 ms block timeout) but a poll timeout,
		// so that RecvFor can return.
		h, err := afpacket.NewTPacket(afpacket.OptInterface(ifname), afpacket.OptPollTimeout(10*time.Millisecond))
		if err != nil {
			return nil, err
		}
		return &gpAFPacket{h: h}, nil
	}
}

type gpAFPacket struct {
	h    *afpacket.TPacket
	sink byte
}

func (g *gpAFPacket) RecvFor(d time.Duration) (uint64, error) {
	var frames uint64
	end := time.Now().Add(d)
	for {
		data, _, err := g.h.ZeroCopyReadPacketData()
		if err != nil {
			// ErrPoll: a socket error (the link flapped); gopacket does not clear it, so keep reading.
			if errors.Is(err, afpacket.ErrTimeout) || errors.Is(err, afpacket.ErrPoll) {
				if time.Now().After(end) {
					return frames, nil
				}
				continue
			}
			return frames, err
		}
		g.sink ^= data[0]
		frames++
		if frames&1023 == 0 && time.Now().After(end) {
			return frames, nil
		}
	}
}

// Drain reads frame by frame; want == 0 is the settle step: one read, which must find nothing
// (after its 10 ms poll timeout).
func (g *gpAFPacket) Drain(want uint64, timeout time.Duration) (frames, waits uint64, err error) {
	if want == 0 {
		data, _, err := g.h.ZeroCopyReadPacketData()
		switch {
		case err == nil:
			g.sink ^= data[0]
			return 1, 0, nil
		case errors.Is(err, afpacket.ErrTimeout) || errors.Is(err, afpacket.ErrPoll):
			return 0, 0, nil
		}
		return 0, 0, err
	}
	var end time.Time
	for frames < want {
		data, _, err := g.h.ZeroCopyReadPacketData()
		if err != nil {
			if errors.Is(err, afpacket.ErrTimeout) || errors.Is(err, afpacket.ErrPoll) {
				if waitBudget(&end, timeout) <= 0 {
					return frames, waits, nil
				}
				waits++
				continue
			}
			return frames, waits, err
		}
		g.sink ^= data[0]
		frames++
	}
	return frames, waits, nil
}

func (g *gpAFPacket) Close() error { g.h.Close(); return nil }
