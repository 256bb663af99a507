package neigh

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/wirespeed/wirespeed/frame"
)

// fuzzReader hands out the fuzzer's bytes, zeros once they run out.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *fuzzReader) done() bool { return len(r.b) == 0 }

var fuzzMACs = []frame.MAC{mac0, mac1, macA, macB, macC, macBC, {1, 0, 0x5e, 0, 0, 1}, {}}

var fuzzAddrs = []netip.Addr{own0, own1, own1b, hostN, hostM, host1, zeroIP,
	netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("224.0.0.1"), netip.MustParseAddr("255.255.255.255"),
	netip.MustParseAddr("10.0.0.255"), netip.MustParseAddr("10.0.0.0"), netip.MustParseAddr("10.0.1.5"),
	netip.MustParseAddr("192.168.1.200"), netip.MustParseAddr("0.1.2.3"), netip.MustParseAddr("192.168.2.9")}

func fuzzMAC(b byte) frame.MAC {
	if b >= 128 {
		return frame.MAC{2, b, b, b, b, b}
	}
	return fuzzMACs[int(b)%len(fuzzMACs)]
}

func fuzzAddr(b byte) netip.Addr {
	if b >= 128 {
		return netip.AddrFrom4([4]byte{10, 0, 0, b & 0x7f})
	}
	return fuzzAddrs[int(b)%len(fuzzAddrs)]
}

// isARP is Input's rule, written out again: the EtherType before Frame.L3 (0: 14), an L2 header
// of at least 14 bytes.
func isARP(f *frame.Frame, d []byte) bool {
	l3 := int(f.L3)
	if l3 == 0 {
		l3 = 14
	}
	return l3 >= 14 && l3 <= len(d) && binary.BigEndian.Uint16(d[l3-2:]) == frame.TypeARP
}

// FuzzInput drives a table with the fuzzer's bytes read as a program: raw frames and ARP frames
// with fuzzed fields (corrupted, truncated) into Input, held frames into Hold, clock steps and
// Polls, and control calls. After every step: no panic, Input took exactly the ARP frames and left
// the others in order, every ARP frame and every held frame is counted once, and every buffer of
// both pools is accounted for.
func FuzzInput(f *testing.F) {
	f.Add([]byte{1, 5, 130, 3, 0, 0, 1, 0, 0, 4, 6, 10, 2, 2, 0, 3, 1, 0, 0, 4})
	f.Add([]byte{5, 0, 10, 5, 0, 20, 6, 30, 2, 0, 3, 0, 0, 2, 0, 0, 4, 6, 5, 6, 50, 6, 50})
	f.Add([]byte{0, 60, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 8, 6, 0, 1, 8, 0, 6, 4, 0, 1, 4})
	f.Add([]byte{7, 0, 0, 4, 5, 0, 10, 1, 0, 2, 3, 4, 6, 0, 3, 3, 0, 0, 1, 1, 5, 0, 2, 40, 0, 4, 6, 200, 6, 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Small pools: the table's can run out (8 entries x 2 frames held, backlogs, out).
		hosts := &hostRoutes{routes: map[netip.Addr]uint32{}}
		r := newRigPools(t, 48, 64, func(c *Config) {
			c.MaxEntries, c.QueueFrames, c.QueueBytes = 8, 2, 300
			c.Hosts, c.HostNextHops = hosts, IndexRange{First: 100, Count: 4}
		})
		r.tab.AddNextHop(0, 0, hostN)
		r.tab.AddNextHop(1, 1, host1)
		r.tab.AddSubnet(2, 0) // held frames' destinations: their fill byte, four times
		in := &fuzzReader{data}
		var pending [][]byte
		var meta [][2]uint16 // port, L3
		now := time.Duration(0)
		flush := func() {
			if len(pending) == 0 {
				return
			}
			b := frame.NewBatch(len(pending))
			r.rx.Alloc(b, len(pending))
			var keep []uint32
			arps := 0
			for i, d := range pending {
				fr := &b.Frames[i]
				fr.Resize(len(d))
				copy(fr.Data(b.Mem), d)
				fr.Port, fr.L3 = meta[i][0], meta[i][1]
				if isARP(fr, fr.Data(b.Mem)) {
					arps++
				} else {
					keep = append(keep, fr.Buf)
				}
			}
			before := r.tab.Counters().ARPIn
			n := r.tab.Input(b, r.out)
			if n != arps || len(b.Frames) != len(keep) {
				t.Fatalf("Input took %d of %d ARP frames, left %d of %d others", n, arps, len(b.Frames), len(keep))
			}
			for i := range keep {
				if b.Frames[i].Buf != keep[i] {
					t.Fatalf("frame %d left is buffer %d, want %d", i, b.Frames[i].Buf, keep[i])
				}
			}
			if got := r.tab.Counters().ARPIn - before; got != uint64(arps) {
				t.Fatalf("%d ARP frames counted, %d taken", got, arps)
			}
			if r.rx.InUse() != len(keep) {
				t.Fatalf("%d input buffers in use, %d frames left", r.rx.InUse(), len(keep))
			}
			b.Free()
			pending, meta = pending[:0], meta[:0]
		}
		for !in.done() {
			if len(pending) == 32 {
				flush()
			}
			switch op := in.next() % 8; op {
			case 0: // a raw frame
				d := make([]byte, in.next())
				for i := range d {
					d[i] = in.next()
				}
				pending = append(pending, d)
				meta = append(meta, [2]uint16{uint16(in.next() % 3), uint16(in.next() % 32)})
			case 1, 2, 3: // an ARP frame
				d := arpBytes(t, uint16(in.next()%4), fuzzMAC(in.next()), fuzzMAC(in.next()), fuzzAddr(in.next()),
					fuzzMAC(in.next()), fuzzAddr(in.next()))
				d = append(d, make([]byte, 18)...) // Ethernet padding
				v := in.next()
				if v&1 != 0 {
					d[14+int(v>>1)%8] = in.next()
				}
				if v&2 != 0 {
					d = d[:14+int(in.next())%42]
				}
				pending = append(pending, d)
				meta = append(meta, [2]uint16{uint16(in.next() % 3), 14})
			case 4:
				flush()
			case 5: // a frame for next hop 0, 1, 2 (a subnet) or 3 (not followed)
				nh := uint32(in.next() % 4)
				b := r.held(nh, uint16(nh%2), 20+4*int(in.next()), in.next())
				r.tab.Hold(b, r.out)
				if len(b.Frames) != 0 || r.rx.InUse() != 0 {
					t.Fatal("Hold kept its input")
				}
			case 6: // time passes, Poll
				now += time.Duration(in.next()) * 50 * time.Millisecond
				r.at(now)
				r.poll()
				r.drainOut()
				r.ready.Free()
				r.failed.Free()
			case 7: // control
				c, k := in.next()%5, in.next()
				switch c {
				case 0:
					r.tab.AddNextHop(uint32(k%4), uint16(k>>2%3), fuzzAddr(in.next()))
				case 1:
					if k&1 == 0 {
						r.tab.RemoveNextHop(uint32(k >> 1 % 4))
					} else {
						r.tab.AddSubnet(uint32(k>>1%4), uint16(k>>3%3))
					}
				case 2:
					r.tab.AddStatic(uint16(k%3), fuzzAddr(in.next()), fuzzMAC(in.next()))
				case 3:
					r.tab.Delete(uint16(k%3), fuzzAddr(in.next()))
				case 4:
					r.tab.Announce(uint16(k%3), r.out)
				}
			}
			r.checkConserved()
			// Every host route leads to the next hop of its host's entry.
			ents := r.tab.Entries()
			hostHops := 0
			for _, e := range ents {
				for _, nh := range e.NextHops {
					if nh >= 100 {
						hostHops++
						if hosts.routes[e.Addr] != nh {
							t.Fatalf("entry %+v, routes %v", e, hosts.routes)
						}
					}
				}
			}
			if hostHops != len(hosts.routes) {
				t.Fatalf("%d host next hops, routes %v", hostHops, hosts.routes)
			}
		}
		flush()
		r.at(now + time.Hour)
		r.poll()
		r.drainOut()
		r.ready.Free()
		r.failed.Free()
		r.checkConserved()
		for _, e := range r.tab.Entries() {
			if e.State == StateNone || (e.State.Valid() && isBadMAC(e.MAC)) {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}
