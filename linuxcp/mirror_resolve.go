//go:build linux

package linuxcp

import (
	"net/netip"
	"time"
)

// Resolver is implemented by a Source that can ask the kernel to resolve a neighbour (NetlinkSource
// does: RTM_NEWNEIGH with NTF_USE, as `ip neigh replace ADDR dev DEV use` sends, which makes the
// kernel start ARP for it as if it had a packet to send there).
type Resolver interface {
	Resolve(link int, addr netip.Addr) error
}

type resolveReq struct {
	idx uint32
	dst netip.Addr
}

// resolveAgain is how long a neighbour asked for is not asked for again.
const resolveAgain = time.Second

// Resolve asks the kernel to resolve the neighbour of next-hop index idx, one of the Mirror's
// next hops flagged fib.NextHopUnresolved: its gateway, or, for a connected subnet's next hop, dst
// (a frame's destination). It is for frames fwd hands to Output.Unresolved (Frame.Meta is idx) when
// the kernel does not forward, so that traffic and not only the kernel's own packets makes the
// kernel resolve the next hop; the Mirror then sees the neighbour entry and fills in the MAC. It
// never blocks and may be called from any goroutine: the request is queued for the Mirror's
// goroutine (dropped when the queue is full), which asks the kernel at most once a second per
// neighbour. It reports whether the request was queued.
func (m *Mirror) Resolve(idx uint32, dst netip.Addr) bool {
	select {
	case m.resolveQ <- resolveReq{idx, dst}:
		return true
	default:
		return false
	}
}

// resolve handles one request on the Mirror's goroutine.
func (m *Mirror) resolve(q resolveReq) {
	r, ok := m.src.(Resolver)
	if !ok || q.idx >= uint32(len(m.byIdx)) {
		return
	}
	e := m.byIdx[q.idx]
	if e == nil {
		return
	}
	var k nkey
	switch e.key.kind {
	case nhGateway:
		k = nkey{e.key.link, e.key.addr}
	case nhSubnet:
		if !q.dst.Is4() {
			return
		}
		k = nkey{e.key.link, q.dst}
	default:
		return
	}
	if n, ok := m.neighs[k]; ok && n.valid {
		return
	}
	now := time.Now()
	if t, ok := m.asked[k]; ok && now.Sub(t) < resolveAgain {
		return
	}
	if len(m.asked) > 4096 {
		for a, t := range m.asked {
			if now.Sub(t) >= resolveAgain {
				delete(m.asked, a)
			}
		}
	}
	m.asked[k] = now
	if err := r.Resolve(k.link, k.ip); err != nil {
		m.logf("linuxcp: mirror: resolve %v on link %d: %v", k.ip, k.link, err)
	}
	m.mu.Lock()
	m.st.Resolves++
	m.mu.Unlock()
}
