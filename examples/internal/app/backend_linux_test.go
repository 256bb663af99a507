package app

import (
	"testing"

	"github.com/wirespeed/wirespeed/internal/nettest"
	"github.com/wirespeed/wirespeed/xmit/afpacket"
)

// TestOpenAFPacketV2: the afpacket-v2 back-end opens AF_PACKET ports with a TPACKET_V2 ring whose
// slots hold MaxFrame, the afpacket back-end with the TPACKET_V3 ring.
func TestOpenAFPacketV2(t *testing.T) {
	nettest.RequirePriv(t)
	ns := nettest.NewNS(t, "v2")
	for _, c := range []struct {
		backend  Backend
		maxFrame int
		slot     int // the FrameRing's FrameSize; 0: no FrameRing
	}{
		{AFPacket, 0, 0},
		{AFPacketV2, 0, afpacket.DefaultFrameRingSize},
		{AFPacketV2, 9018, 9088},
	} {
		var ports *Ports
		if err := ns.Do(func() (err error) {
			ports, err = Open(OpenConfig{Backend: c.backend, Ifnames: []string{"lo"}, Workers: 2, MaxFrame: c.maxFrame})
			return err
		}); err != nil {
			t.Fatalf("%s: %v", c.backend, err)
		}
		for w, ps := range ports.ByWorker {
			cfg := ps[0].(*afpacket.Port).Config()
			if got := cfg.FrameRing; (got == nil) != (c.slot == 0) || got != nil && got.FrameSize != c.slot {
				t.Errorf("%s, MaxFrame %d, worker %d: FrameRing %+v, want slots of %d bytes", c.backend, c.maxFrame, w, got, c.slot)
			}
			if cfg.Fanout == nil {
				t.Errorf("%s, worker %d: no fanout with 2 workers", c.backend, w)
			}
		}
		if err := ports.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
