package unroll

import (
	"strings"
	"testing"
)

// src is a batch.go with one decode loop whose body is body.
func src(body string) []byte {
	return []byte(`package dsa

func decXBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {
	fb, ib, rb, end := walk(fr, ins, rs)
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
` + body + `
	}
}
`)
}

// TestBatchLoopsRefuses: a body the rewrite cannot keep equivalent is an error, not a wrong loop.
func TestBatchLoopsRefuses(t *testing.T) {
	for _, body := range []string{
		"f := (*frame.Frame)(unsafe.Add(fb, p)); _ = p",           // p beyond the forms
		"in := (*Info)(unsafe.Add(ib, q+1)); _ = in",              // q beyond the forms
		"if end > 0 { slow(rb, p) }",                              // end
		"for i := 0; i < 2; i++ { continue }",                     // a nested loop (its continue)
		"if len(mem) == 0 { break }",                              // break
		"if len(mem) == 0 { return }",                             // return
		"func() { slow(rb, p) }()",                                // a closure
		"if len(mem) == 0 { goto x }\nx:\nslow(rb, p)",            // goto, label
		"switch { case len(mem) == 0: fallthrough; default: }",    // fallthrough
		"f := (*frame.Frame)(unsafe.Add(fb, p)); _ = f; continue", // fine: see below
	} {
		_, err := BatchLoops(src(body))
		if ok := strings.HasSuffix(body, "continue"); ok != (err == nil) {
			t.Errorf("%q: err %v", body, err)
		}
	}
}

// TestBatchLoopsRewrite: frame k of an iteration reaches fr[k], ins[k] and rs[k], and a continue
// jumps to frame k+1.
func TestBatchLoopsRewrite(t *testing.T) {
	out, err := BatchLoops(src(`		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		if f.Len > 0 {
			*in = Info{}
			continue
		}
		slow(rb, p)`))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"func decXBatchx4(mem []byte, fr []frame.Frame, ins []Info, rs []Reason) {",
		"decXBatch(mem, fr[n4:], ins[n4:], rs[n4:])",
		"unsafe.Add(fb, 3*frameSize)", "unsafe.Add(ib, 3*infoSize)", "slow(rb, 3*frameSize)",
		"goto next3", "next3:",
		"fb, ib, rb = unsafe.Add(fb, 4*frameSize), unsafe.Add(ib, 4*infoSize), unsafe.Add(rb, 4)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "continue") || strings.Contains(s, "unsafe.Add(fb, p)") {
		t.Errorf("continue or p left in\n%s", s)
	}
}
