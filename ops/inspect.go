package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/wirespeed/wirespeed/fib"
	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/neigh"
	"github.com/wirespeed/wirespeed/vlan"
	"github.com/wirespeed/wirespeed/xmit"
)

// PortInfo is one port as /ports reports it.
type PortInfo struct {
	Name   string      `json:"name"`
	LinkUp *bool       `json:"link_up,omitempty"` // absent when the port does not know
	Stats  *xmit.Stats `json:"stats,omitempty"`
	// RecvErrors and SendErrors count the errors the port's calls returned (Port.Errors), with
	// the last one's text.
	RecvErrors    uint64 `json:"recv_errors"`
	SendErrors    uint64 `json:"send_errors"`
	LastRecvError string `json:"last_recv_error,omitempty"`
	LastSendError string `json:"last_send_error,omitempty"`
}

// IfaceInfo is one logical interface of the stage as /interfaces reports it.
type IfaceInfo struct {
	ID       uint16         `json:"id"`
	Name     string         `json:"name"`
	MAC      string         `json:"mac"`
	MTU      int            `json:"mtu"`
	Addrs    []netip.Prefix `json:"addrs"`
	Counters vlan.Counters  `json:"counters"`
}

// NeighInfo is one neighbour as /neighbours reports it.
type NeighInfo struct {
	Interface string     `json:"interface"`
	Addr      netip.Addr `json:"addr"`
	MAC       string     `json:"mac,omitempty"` // absent until known
	State     string     `json:"state"`
	NextHops  []uint32   `json:"next_hops,omitempty"`
	Held      int        `json:"held"`
}

// RouteInfo is the answer of /route?addr=A: what the router does with a packet to A.
type RouteInfo struct {
	Addr netip.Addr `json:"addr"`
	// Local is set when A is one of the router's addresses (answered by the router itself) or a
	// connected subnet's broadcast address; Interface is then the interface it belongs to.
	Local     string   `json:"local,omitempty"` // "address" or "broadcast"
	Found     bool     `json:"found"`           // a route covers A
	Prefix    string   `json:"prefix,omitempty"`
	NextHop   *uint32  `json:"next_hop,omitempty"`
	Interface string   `json:"interface,omitempty"`
	MAC       string   `json:"mac,omitempty"`   // the next hop's destination MAC, when resolved
	Flags     []string `json:"flags,omitempty"` // "blackhole", "local", "unresolved"
	// Missing is set when the route's next-hop index has no entry in the next-hop table (the
	// stage drops such packets as no-route).
	Missing   bool       `json:"missing,omitempty"`
	Neighbour *NeighInfo `json:"neighbour,omitempty"`
}

type errorReply struct {
	Error string `json:"error"`
}

// NewHandler returns a read-only HTTP handler of src that answers GET requests with JSON:
//
//	/ports        the ports: link state, xmit.Stats, errors of their calls
//	/interfaces   the stage's interfaces: name, MAC, MTU, addresses, counters
//	/neighbours   the neighbour table, as `ip neigh` lists it
//	/route?addr=A what the router does with a packet to A: the router's own address, or the
//	              longest prefix that covers A, its next hop, the egress interface, the MAC and
//	              the neighbour entry behind it
//	/trace?n=N&timeout=D (GET or POST, with Source.Trace) the next N frames the workers judge,
//	              each with its verdict, headers and egress (see Trace.Capture); it waits until
//	              N came or D passed (default 1s)
//
// Mount it on a mux with http.StripPrefix to serve it below a path. Every request reads the
// counters and tables at that moment, as a scrape does (see Collector on the cost).
func NewHandler(src *Source) http.Handler {
	c := NewCollector(src) // a copy of src
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ports", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, c.ports()) })
	mux.HandleFunc("GET /interfaces", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, c.ifaces()) })
	mux.HandleFunc("GET /neighbours", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, c.neighbours()) })
	mux.HandleFunc("GET /route", func(w http.ResponseWriter, r *http.Request) {
		a, err := netip.ParseAddr(r.URL.Query().Get("addr"))
		if err != nil {
			reply(w, http.StatusBadRequest, errorReply{"addr: want an IPv4 address (/route?addr=10.0.2.2)"})
			return
		}
		if a = a.Unmap(); !a.Is4() {
			reply(w, http.StatusBadRequest, errorReply{"addr: the router routes IPv4 only"})
			return
		}
		reply(w, http.StatusOK, c.route(a, true))
	})
	paths := []string{"/ports", "/interfaces", "/neighbours", "/route?addr=A"}
	if c.src.Trace != nil {
		paths = append(paths, "/trace?n=N&timeout=D")
		mux.HandleFunc("GET /trace", c.serveTrace)
		mux.HandleFunc("POST /trace", c.serveTrace)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, paths) })
	return mux
}

// Limits of a /trace request.
const (
	DefaultTraceTimeout = time.Second
	MaxTraceTimeout     = 30 * time.Second
)

// serveTrace answers /trace?n=N&timeout=D: it arms the trace for the next N frames (default 10)
// and returns them once taken, or what came within D (default 1s, at most 30s).
func (c *Collector) serveTrace(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := 10
	if v := q.Get("n"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 || k > c.src.Trace.Size() {
			reply(w, http.StatusBadRequest, errorReply{fmt.Sprintf("n: want a number of frames, 1-%d", c.src.Trace.Size())})
			return
		}
		n = k
	}
	timeout := DefaultTraceTimeout
	if v := q.Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > MaxTraceTimeout {
			reply(w, http.StatusBadRequest, errorReply{fmt.Sprintf("timeout: want a duration, more than 0 and at most %v (timeout=2s)", MaxTraceTimeout)})
			return
		}
		timeout = d
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	reply(w, http.StatusOK, c.src.Trace.capture2(ctx, n, c.egress, c.src.Ports))
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	e.Encode(v)
}

func (c *Collector) ports() []PortInfo {
	out := []PortInfo{}
	for _, p := range c.src.Ports {
		pi := PortInfo{Name: p.Name}
		if p.Stats != nil {
			s := p.Stats()
			pi.Stats = &s
		}
		if p.LinkUp != nil {
			up := p.LinkUp()
			pi.LinkUp = &up
		}
		if p.Errors != nil {
			e := p.Errors.Counts()
			pi.RecvErrors, pi.SendErrors = e.Recv, e.Send
			if e.LastRecv != nil {
				pi.LastRecvError = e.LastRecv.Error()
			}
			if e.LastSend != nil {
				pi.LastSendError = e.LastSend.Error()
			}
		}
		out = append(out, pi)
	}
	return out
}

func (c *Collector) ifaces() []IfaceInfo {
	out := []IfaceInfo{}
	if r := c.src.Stage; r != nil {
		for i, ifc := range r.Ifaces() {
			out = append(out, IfaceInfo{ID: uint16(i), Name: ifaceName(r, uint16(i)), MAC: ifc.MAC.String(), MTU: ifc.MTU,
				Addrs: slices.Clone(ifc.Addrs), Counters: r.IfaceStats(uint16(i))})
		}
	}
	return out
}

func (c *Collector) neighInfo(e neigh.Entry) NeighInfo {
	n := NeighInfo{Interface: ifaceName(c.src.Stage, e.Iface), Addr: e.Addr, State: e.State.String(), NextHops: e.NextHops, Held: e.Held}
	if e.MAC != ([6]byte{}) {
		n.MAC = e.MAC.String()
	}
	return n
}

func (c *Collector) neighbours() []NeighInfo {
	out := []NeighInfo{}
	if c.src.Neigh != nil {
		for _, e := range c.src.Neigh.Entries() {
			out = append(out, c.neighInfo(e))
		}
	}
	return out
}

// route answers /route for an IPv4 address: the stage's own addresses and its subnets' broadcast
// addresses first (it takes them before any lookup), then the route table and the next hop, and
// with neighbour the neighbour entry behind it (a copy of the table's entries: the costly part).
func (c *Collector) route(a netip.Addr, neighbour bool) RouteInfo {
	ri := RouteInfo{Addr: a}
	if r := c.src.Stage; r != nil {
		for i, ifc := range r.Ifaces() {
			for _, p := range ifc.Addrs {
				switch {
				case p.Addr() == a:
					ri.Local = "address"
				case p.Bits() <= 30 && p.Contains(a) && broadcast(p) == a:
					ri.Local = "broadcast"
				default:
					continue
				}
				ri.Interface = ifaceName(r, uint16(i))
				return ri
			}
		}
	}
	rt := c.src.Routes
	if rt == nil {
		return ri
	}
	idx, ok := rt.Lookup(a)
	if !ok {
		return ri
	}
	ri.Found, ri.NextHop = true, &idx
	for bits := 32; bits >= 0; bits-- {
		p := netip.PrefixFrom(a, bits).Masked()
		if nh, ok := rt.Get(p); ok && nh == idx {
			ri.Prefix = p.String()
			break
		}
	}
	var hops *fib.NextHops
	if c.src.Stage != nil {
		hops = c.src.Stage.NextHops()
	} else if c.src.Neigh != nil {
		hops = c.src.Neigh.NextHops()
	}
	if hops == nil {
		return ri
	}
	h, ok := hops.Get(idx)
	if !ok {
		ri.Missing = true
		return ri
	}
	switch {
	case h.Flags&fib.NextHopDrop != 0:
		ri.Flags = append(ri.Flags, "blackhole")
	case h.Flags&fib.NextHopLocal != 0:
		ri.Flags = append(ri.Flags, "local")
	}
	if h.Flags&(fib.NextHopDrop|fib.NextHopLocal) != 0 {
		return ri
	}
	ri.Interface = ifaceName(c.src.Stage, h.Ifindex)
	if h.Flags&fib.NextHopUnresolved != 0 {
		ri.Flags = append(ri.Flags, "unresolved")
	} else {
		ri.MAC = frame.MAC(h.DstMAC).String()
	}
	if c.src.Neigh != nil && neighbour {
		// The neighbour that follows the next hop (a gateway, or a host's own next hop), or else
		// the entry of the address itself on the egress interface (a host being resolved).
		var self *neigh.Entry
		for _, e := range c.src.Neigh.Entries() {
			if slices.Contains(e.NextHops, idx) {
				n := c.neighInfo(e)
				ri.Neighbour = &n
				return ri
			}
			if e.Addr == a && e.Iface == h.Ifindex {
				self = &e
			}
		}
		if self != nil {
			n := c.neighInfo(*self)
			ri.Neighbour = &n
		}
	}
	return ri
}

func broadcast(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	host := ^uint32(0) >> p.Bits()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
