package unroll

import (
	"strings"
	"testing"
)

// src is a batch.go with one decode loop whose body is body.
func src(body string) []byte {
	return decSrc("", body)
}

// decSrc is a batch.go with one decode loop: pre between walk and the loop, then body.
func decSrc(pre, body string) []byte {
	return []byte(`package dsa

func decXBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, tw uint32) {
	fb, ib, rb, end := walk(fr, ins, rs)
` + pre + `
	for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {
` + body + `
	}
}
`)
}

// encSrc is a batch.go with one encode loop function: sig its parameters, then pre, head (the
// loop header) and body.
func encSrc(sig, pre, head, body string) []byte {
	return []byte(`package dsa

func encXBatch(` + sig + `) {
	fb, rb, end := frames(fr, rs)
` + pre + `
	` + head + `
` + body + `
	}
}
`)
}

const (
	encSig  = "mem []byte, fr []frame.Frame, rs []Reason, tw uint32"
	encHead = "for p := uintptr(0); p < end; p += frameSize {"
	encBody = "\t\tf := (*frame.Frame)(unsafe.Add(fb, p))\n\t\tif f.Len > 0 {\n\t\t\tcontinue\n\t\t}\n\t\tslow(rb, p)"
)

// TestBatchLoopsRefuses: a source the rewrite cannot keep equivalent is an error naming the
// reason, not a wrong loop and not a silent skip. Each case but the first differs from an
// accepted source in the one point it names.
func TestBatchLoopsRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		src  []byte
		err  string // "" for accepted
	}{
		{"accepted decode", src("f := (*frame.Frame)(unsafe.Add(fb, p)); _ = f\nif f.Len > 0 {\ncontinue\n}\nslow(rb, p)"), ""},
		{"accepted encode", encSrc(encSig, "lim := int64(len(mem)) - 4; _ = lim", encHead, encBody), ""},
		{"continue before a brace", src("f := (*frame.Frame)(unsafe.Add(fb, p)); if f.Len > 0 { continue }; slow(rb, p)"), ""},
		{"continue in a switch", encSrc(encSig, "", encHead, "\t\tf := (*frame.Frame)(unsafe.Add(fb, p))\n\t\tswitch f.Len {\n\t\tcase 1:\n\t\t\tcontinue\n\t\t}\n\t\tslow(rb, p)"), ""},

		// The body.
		{"p beyond the forms", src("f := (*frame.Frame)(unsafe.Add(fb, p)); _ = p; _ = f"), "body uses p"},
		{"q beyond the forms", src("in := (*Info)(unsafe.Add(ib, q)); _ = in; _ = q + 1"), "body uses q"},
		{"ib with an offset", src("in := (*Info)(unsafe.Add(ib, q+1)); _ = in"), "body uses ib"},
		{"end in the body", src("if end > 0 {\nslow(rb, p)\n}"), "body uses end"},
		{"fb beyond the forms", encSrc(encSig, "", encHead, "\t\tif (*frame.Frame)(fb).Len == 0 {\n\t\t\tcontinue\n\t\t}\n\t\tslow(rb, p)"), "body uses fb"},
		{"rb beyond the forms", encSrc(encSig, "", encHead, "\t\t*(*Reason)(rb) = 1"), "body uses rb"},
		{"ib in an encode-style form", src("in := (*Info)(unsafe.Add(ib, p)); _ = in"), "body uses ib"},
		{"len(fr) in the body", encSrc(encSig, "", encHead, "\t\tif len(fr) > 8 {\n\t\t\tcontinue\n\t\t}\n\t\tslow(rb, p)"), "body uses fr"},
		{"rs in the body", encSrc(encSig, "", encHead, "\t\trs[0] = 1\n\t\tslow(rb, p)"), "body uses rs"},
		{"ins in the body", src("ins[0] = Info{}\nslow(rb, p)"), "body uses ins"},
		{"a generated name in the body", src("x4k := 1; _ = x4k\nslow(rb, p)"), "body uses x4k"},
		{"a nested loop", src("for i := 0; i < 2; i++ {\n_ = i\n}\nslow(rb, p)"), "body holds for"},
		{"break", src("if len(mem) == 0 {\nbreak\n}\nslow(rb, p)"), "body holds break"},
		{"return", src("if len(mem) == 0 {\nreturn\n}\nslow(rb, p)"), "body holds return"},
		{"a closure", src("g := func() {}\ng()\nslow(rb, p)"), "body holds func"},
		{"goto", src("if len(mem) == 0 {\ngoto x\n}\nx:\nslow(rb, p)"), "body holds goto"},
		{"fallthrough", src("switch {\ncase len(mem) == 0:\nfallthrough\ndefault:\n}\nslow(rb, p)"), "body holds fallthrough"},
		{"a labelled continue", src("if len(mem) == 0 {\ncontinue L\n}\nslow(rb, p)"), "labelled continue"},

		// The prologue.
		{"a parameter reassigned", encSrc(encSig, "tw = bswap32(tw)", encHead, encBody), "prologue: writes tw"},
		{"a parameter incremented", encSrc(encSig, "tw++", encHead, encBody), "prologue: writes tw"},
		{"a parameter's address", encSrc(encSig, "pt := &tw; _ = pt", encHead, encBody), "prologue: writes tw"},
		{"a parameter redeclared", encSrc(encSig, "tw, x := uint32(1), 2; _ = x", encHead, encBody), "prologue: writes tw"},
		{"fr resliced", encSrc(encSig, "fr = fr[1:]", encHead, encBody), "prologue: writes fr"},
		{"an element of rs", encSrc(encSig, "rs[0] = 1", encHead, encBody), "prologue: writes rs"},
		{"end narrowed", encSrc(encSig, "end = min(end, 8*frameSize)", encHead, encBody), "prologue: writes end"},
		{"fb in the prologue", encSrc(encSig, "f0 := (*frame.Frame)(fb); _ = f0", encHead, encBody), "prologue: uses fb"},
		{"rb in the prologue", encSrc(encSig, "g := func() { slow(rb, 0) }; _ = g", encHead, encBody), "prologue: uses rb"},
		{"a generated name in the prologue", encSrc(encSig, "x4r := 1; _ = x4r", encHead, encBody), "prologue: uses x4r"},

		// The form of the function.
		{"the results parameter named r", []byte(strings.Replace(string(encSrc("mem []byte, fr []frame.Frame, r []Reason, tw uint32", "", encHead, encBody)), "frames(fr, rs)", "frames(fr, r)", 1)), "the first statement"},
		{"rs of another type", encSrc("mem []byte, fr []frame.Frame, rs []byte, tw uint32", "", encHead, encBody), "no parameter rs []Reason"},
		{"a loop header spelled differently", encSrc(encSig, "", "for p := uintptr(0); p != end; p += frameSize {", encBody), "the loop header"},
		{"a decode header after frames", encSrc(encSig, "", "for p, q := uintptr(0), uintptr(0); p < end; p, q = p+frameSize, q+infoSize {", encBody), "the loop header"},
		{"no prologue", []byte("package dsa\n\nfunc encXBatch(" + encSig + ") {\n\t" + encHead + "\n\t}\n}\n"), "not a prologue and a loop"},
		{"a statement after the loop", []byte(strings.Replace(string(encSrc(encSig, "", encHead, encBody)), "\t}\n}\n", "\t}\n\t_ = tw\n}\n", 1)), "the last statement"},
		{"results", []byte(strings.Replace(string(encSrc(encSig, "", encHead, encBody)), "tw uint32) {", "tw uint32) (n int) {", 1)), "has results"},
		{"a method", []byte(strings.Replace(string(encSrc(encSig, "", encHead, encBody)), "func encXBatch", "func (c *codec) encXBatch", 1)), "a method"},
	} {
		_, err := BatchLoops(Source{"batch.go", c.src})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: err %v, want one with %q", c.name, err, c.err)
		}
	}
}

// TestBatchLoopsSkips: a function whose name does not match the pattern, the dispatcher
// decodeBatch, is not a loop function; one that does and is not one is an error.
func TestBatchLoopsSkips(t *testing.T) {
	s := string(encSrc(encSig, "", encHead, encBody)) + "\nfunc decodeBatch(fr []frame.Frame) int { return len(fr) }\n"
	if _, err := BatchLoops(Source{"batch.go", []byte(s)}); err != nil {
		t.Errorf("decodeBatch: %v", err)
	}
	s += "\nfunc encYBatch(fr []frame.Frame) int { return len(fr) }\n"
	if _, err := BatchLoops(Source{"batch.go", []byte(s)}); err == nil || !strings.Contains(err.Error(), "encYBatch") {
		t.Errorf("encYBatch: err %v", err)
	}
}

// TestBatchLoopsRewrite: frame k of an iteration reaches fr[k], ins[k] and rs[k], a continue
// jumps to frame k+1, and the first len(fr) % 4 frames run through the body in the same
// function (no call back into decXBatch).
func TestBatchLoopsRewrite(t *testing.T) {
	out, err := BatchLoops(Source{"batch.go", decSrc("\tlim := tw + 1 // a comment\n", `		f, in := (*frame.Frame)(unsafe.Add(fb, p)), (*Info)(unsafe.Add(ib, q))
		if f.Len > 0 { // "unsafe.Add(fb, p)" in a comment stays
			*in = Info{Code: uint8(lim)}
			s := "slow(rb, p)"
			_ = s
			continue
		}
		slow(rb, p)`)})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"func decXBatchx4(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, tw uint32) {",
		"fb, ib, rb, end := walk(fr, ins, rs)\n\tlim := tw + 1 // a comment\n",
		"x4k := len(fr) / 4\n\tif x4r := len(fr) % 4; x4r != 0 {",
		"unsafe.Add(fb, 3*frameSize)", "unsafe.Add(ib, 3*infoSize)", "slow(rb, 3*frameSize)",
		"goto x4next3", "x4next3:",
		"fb, ib, rb = unsafe.Add(fb, 4*frameSize), unsafe.Add(ib, 4*infoSize), unsafe.Add(rb, 4)",
		"if x4k == 0 {\n\t\t\treturn\n\t\t}", "} else if x4k == 0 {\n\t\treturn\n\t}",
		"goto x4one", "x4one:",
		"fb, ib, rb = unsafe.Add(fb, 1*frameSize), unsafe.Add(ib, 1*infoSize), unsafe.Add(rb, 1)",
		`// "unsafe.Add(fb, p)" in a comment stays`, `s := "slow(rb, p)"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "continue") || strings.Contains(s, "decXBatch(") || strings.Count(s, "unsafe.Add(fb, p)") != 5 {
		t.Errorf("continue, a call of decXBatch, or p outside the comment left in\n%s", s)
	}
	if n := strings.Count(s, "lim := tw + 1"); n != 1 {
		t.Errorf("prologue %d times", n)
	}
}
