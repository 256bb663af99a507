package afxdp

import (
	"strings"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
)

// These run without privileges: a UMEM is plain memory until a socket registers it.

func TestUMEMConfig(t *testing.T) {
	for _, c := range []UMEMConfig{{FrameSize: 1000}, {Frames: 8}, {Headroom: 4000}, {Frames: 1 << 21}} {
		if u, err := NewUMEM(&c); err == nil {
			u.Close()
			t.Errorf("%+v accepted", c)
		}
	}
	u, err := NewUMEM(&UMEMConfig{Frames: 100, FrameSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if u.Frames() != 128 || u.FrameSize() != 4096 || len(u.Mem()) != 128*4096 {
		t.Fatalf("frames %d size %d mem %d", u.Frames(), u.FrameSize(), len(u.Mem()))
	}
	if a := u.Accounting(); a.Free != 128 || a.Sum() != a.Total {
		t.Fatalf("fresh UMEM %+v", a)
	}
	if err := u.Close(); err != nil || u.Mem() != nil {
		t.Fatalf("Close: %v", err)
	}
}

// take hands n free chunks to the caller as Send's copy path does.
func take(u *UMEM, n int) []frame.Frame {
	u.mu.Lock()
	defer u.mu.Unlock()
	var fr []frame.Frame
	for i := 0; i < n; i++ {
		c := u.free[len(u.free)-1]
		u.free = u.free[:len(u.free)-1]
		u.where[c] = placeUser
		u.nUser++
		fr = append(fr, frame.Frame{Off: c << u.shift, Buf: c})
	}
	return fr
}

func TestUMEMDoubleRelease(t *testing.T) {
	u, err := NewUMEM(&UMEMConfig{Frames: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	fr := take(u, 3)
	if a := u.Accounting(); a.User != 3 || a.Free != 61 {
		t.Fatalf("%+v", a)
	}
	if err := u.Verify(); err != nil {
		t.Fatal(err)
	}
	u.Release(fr[:2])
	for _, bad := range [][]frame.Frame{fr[1:2], {{Buf: 1000}}} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, "not held") {
					t.Fatalf("bad release: recovered %v", r)
				}
			}()
			u.Release(bad)
		}()
	}
	if err := u.Verify(); err != nil {
		t.Fatal(err)
	}
	u.Release(fr[2:])
	if a := u.Accounting(); a.Free != a.Total {
		t.Fatalf("%+v", a)
	}
	// Verify catches a corrupted free list.
	u.mu.Lock()
	u.free = append(u.free, u.free[0])
	u.mu.Unlock()
	if u.Verify() == nil {
		t.Fatal("duplicate free entry not detected")
	}
}

func TestUMEMCloseWaitsForFrames(t *testing.T) {
	u, err := NewUMEM(&UMEMConfig{Frames: 16})
	if err != nil {
		t.Fatal(err)
	}
	fr := take(u, 1)
	u.Close()
	if u.Mem() == nil {
		t.Fatal("unmapped while a frame is held")
	}
	u.Release(fr)
	if u.Mem() != nil {
		t.Fatal("still mapped after the last release")
	}
}
