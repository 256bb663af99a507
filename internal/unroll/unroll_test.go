package unroll

import (
	"strings"
	"testing"
)

// decSrc is a batch.go of package dsa with one decode loop: pre before the loop, then body.
func decSrc(pre, body string) []byte {
	return []byte(`package dsa

func decXBatch(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, tw uint32) {
` + pre + `
	for i := range fr {
` + body + `
	}
}
`)
}

// src is decSrc with no prologue.
func src(body string) []byte { return decSrc("", body) }

// encSrc is a batch.go with one encode loop function: sig its parameters, then pre, head (the
// loop header) and body.
func encSrc(sig, pre, head, body string) []byte {
	return []byte(`package dsa

func encXBatch(` + sig + `) {
` + pre + `
	` + head + `
` + body + `
	}
}
`)
}

// lagSrc is an xor.go of package lag with one loop xorL2 (which Lag binds three parameters of):
// sig its parameters, then pre and body, and the return after the loop.
func lagSrc(sig, pre, body, ret string) []byte {
	return []byte(`package lag

func xorL2(` + sig + `) (rare uint64) {
` + pre + `
	for i := range fr {
` + body + `
	}
	` + ret + `
}
`)
}

const (
	encSig  = "mem []byte, fr []frame.Frame, rs []Reason, tw uint32"
	encHead = "for i := range fr {"
	encBody = "\t\tf := &fr[i]\n\t\tif f.Len > 0 {\n\t\t\tcontinue\n\t\t}\n\t\trs[i] = reasonSlow"
	lagSig  = "mp, ds uint64, u *[256]uint8, mem []byte, fr []frame.Frame, out []uint8"
	lagPre  = "\tif len(mem) < l2Win {\n\t\treturn ^uint64(0) >> (64 - len(fr))\n\t}\n\tlim := int64(len(mem)) - l2Win"
	lagBody = "\t\tif f := &fr[i]; int64(f.Off) > lim {\n\t\t\trare |= 1 << (i & 63)\n\t\t} else {\n\t\t\tout[i] = pick(u, mp, ds, uint32(f.Off))\n\t\t}"
)

// TestLoopsRefuses: a source the rewrite cannot keep equivalent is an error naming the reason,
// not a wrong loop and not a silent skip. Each case but the first ones differs from an accepted
// source in the one point it names.
func TestLoopsRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *Package
		src  []byte
		err  string // "" for accepted
	}{
		{"accepted decode", &DSA, src("f, in := &fr[i], &ins[i]; _ = in\nif f.Len > 0 {\ncontinue\n}\nrs[i] = reasonSlow"), ""},
		{"accepted encode", &DSA, encSrc(encSig, "lim := int64(len(mem)) - 4; _ = lim", encHead, encBody), ""},
		{"accepted backward", &Lag, lagSrc(lagSig, lagPre, lagBody, "return rare"), ""},
		{"a bare return after the loop", &Lag, lagSrc(lagSig, lagPre, lagBody, "return"), ""},
		{"continue before a brace", &DSA, src("f := &fr[i]; if f.Len > 0 { continue }; rs[i] = reasonSlow"), ""},
		{"continue in a switch", &DSA, encSrc(encSig, "", encHead, "\t\tswitch fr[i].Len {\n\t\tcase 1:\n\t\t\tcontinue\n\t\t}\n\t\trs[i] = reasonSlow"), ""},
		{"continue in a backward walk", &Lag, lagSrc(lagSig, lagPre, "if fr[i].Len == 0 {\ncontinue\n}\n"+lagBody, "return rare"), ""},
		{"the loop variable named k", &DSA, []byte(strings.NewReplacer("i := range", "k := range", "[i]", "[k]").Replace(string(encSrc(encSig, "", encHead, encBody)))), ""},
		{"a walked slice read", &DSA, src("if rs[i] == 0 {\nins[i] = Info{}\n}"), ""},
		{"a selector on an element", &DSA, src("ins[i].Port = uint16(mem[0])\nrs[i] = reasonSlow"), ""},
		{"a slice not walked", &DSA, src("mem[0] = byte(tw)\nrs[i] = reasonSlow"), ""},

		// The body.
		{"i beyond the forms", &DSA, src("f := &fr[i]; _ = i; _ = f"), "body uses i"},
		{"an index off by one", &DSA, src("in := &ins[i+1]; _ = in"), "body uses i"},
		{"len(fr) in the body", &DSA, encSrc(encSig, "", encHead, "\t\tif len(fr) > 8 {\n\t\t\tcontinue\n\t\t}\n\t\trs[i] = reasonSlow"), "body uses fr"},
		{"another element of a walked slice", &DSA, encSrc(encSig, "", encHead, "\t\trs[0] = 1\n\t\trs[i] = reasonSlow"), "body uses rs"},
		{"a walked slice resliced", &DSA, src("ins = ins[1:]\nins[i] = Info{}"), "body uses ins"},
		{"the frame's bit in a forward walk", &DSA, src("tw |= 1 << (i & 63)\nrs[i] = reasonSlow"), "forward walk"},
		{"a frame bit of another width", &Lag, lagSrc(lagSig, lagPre, "rare |= 1 << (i & 31)\n"+lagBody, "return rare"), "body uses i"},
		{"a generated name in the body", &DSA, src("x4k := 1; _ = x4k\nrs[i] = reasonSlow"), "body uses x4k"},
		{"a nested loop", &DSA, src("for j := 0; j < 2; j++ {\n_ = j\n}\nrs[i] = reasonSlow"), "body holds for"},
		{"a range loop in the body", &DSA, src("for range 2 {\n}\nrs[i] = reasonSlow"), "body holds for"},
		{"break", &DSA, src("if len(mem) == 0 {\nbreak\n}\nrs[i] = reasonSlow"), "body holds break"},
		{"return", &DSA, src("if len(mem) == 0 {\nreturn\n}\nrs[i] = reasonSlow"), "body holds return"},
		{"return in a backward walk", &Lag, lagSrc(lagSig, lagPre, "if len(mem) == 0 {\nreturn rare\n}\n"+lagBody, "return rare"), "body holds return"},
		{"a closure", &DSA, src("g := func() {}\ng()\nrs[i] = reasonSlow"), "body holds func"},
		{"goto", &DSA, src("if len(mem) == 0 {\ngoto x\n}\nx:\nrs[i] = reasonSlow"), "body holds goto"},
		{"fallthrough", &DSA, src("switch {\ncase len(mem) == 0:\nfallthrough\ndefault:\n}\nrs[i] = reasonSlow"), "body holds fallthrough"},
		{"a labelled continue", &DSA, src("if len(mem) == 0 {\ncontinue L\n}\nrs[i] = reasonSlow"), "labelled continue"},
		{"a walked slice of an unknown element", &DSA, encSrc(encSig+", xs []int", "", encHead, "\t\txs[i] = 1"), "no step for xs's element int"},

		// The prologue.
		{"a parameter reassigned", &DSA, encSrc(encSig, "tw = bswap32(tw)", encHead, encBody), "prologue: writes tw"},
		{"a parameter incremented", &DSA, encSrc(encSig, "tw++", encHead, encBody), "prologue: writes tw"},
		{"a parameter's address", &DSA, encSrc(encSig, "pt := &tw; _ = pt", encHead, encBody), "prologue: writes tw"},
		{"a parameter redeclared", &DSA, encSrc(encSig, "tw, x := uint32(1), 2; _ = x", encHead, encBody), "prologue: writes tw"},
		{"fr resliced", &DSA, encSrc(encSig, "fr = fr[1:]", encHead, encBody), "prologue: writes fr"},
		{"out resliced", &Lag, lagSrc(lagSig, "out = out[:len(fr)]\n"+lagPre, lagBody, "return rare"), "prologue: writes out"},
		{"an element of rs", &DSA, encSrc(encSig, "rs[0] = 1", encHead, encBody), "prologue: writes rs"},
		{"a generated name in the prologue", &DSA, encSrc(encSig, "x4r := 1; _ = x4r", encHead, encBody), "prologue: uses x4r"},

		// The form of the function.
		{"no frame slice", &DSA, encSrc("mem []byte, frs []frame.Frame, rs []Reason, tw uint32", "", "for i := range frs {", "\t\trs[i] = reasonSlow"), "the loop header"},
		{"a frame slice of another type", &DSA, encSrc("mem []byte, fr []byte, rs []Reason, tw uint32", "", encHead, "\t\trs[i] = reasonSlow"), "no parameter fr []frame.Frame"},
		{"a three-clause loop", &DSA, encSrc(encSig, "", "for i := 0; i < len(fr); i++ {", encBody), "the last statement is not the loop"},
		{"a range over another slice", &DSA, encSrc(encSig, "", "for i := range rs {", encBody), "the loop header"},
		{"a range with a value", &DSA, encSrc(encSig, "", "for i, g := range fr {\n_ = g", encBody), "the loop header"},
		{"a range assigning", &DSA, encSrc(encSig, "var i int", "for i = range fr {", encBody), "the loop header"},
		{"no prologue and no loop", &DSA, []byte("package dsa\n\nfunc encXBatch(" + encSig + ") {\n}\n"), "no loop"},
		{"a statement after the loop", &DSA, []byte(strings.Replace(string(encSrc(encSig, "", encHead, encBody)), "\t}\n}\n", "\t}\n\t_ = tw\n}\n", 1)), "the last statement"},
		{"results and no return", &DSA, []byte(strings.Replace(string(encSrc(encSig, "", encHead, encBody)), "tw uint32) {", "tw uint32) (n int) {", 1)), "not followed by return"},
		{"unnamed results", &DSA, []byte(strings.Replace(string(encSrc(encSig, "", encHead, encBody)), "tw uint32) {", "tw uint32) int {", 1)), "unnamed results"},
		{"a return of something else", &Lag, lagSrc(lagSig, lagPre, lagBody, "return rare | 1"), "not followed by return"},
		{"a method", &DSA, []byte(strings.Replace(string(encSrc(encSig, "", encHead, encBody)), "func encXBatch", "func (c *codec) encXBatch", 1)), "a method"},
		{"generic", &DSA, []byte(strings.Replace(string(encSrc(encSig, "", encHead, encBody)), "func encXBatch(", "func encXBatch[T any](", 1)), "generic"},

		// The generated function's parameters (Lag's Params and Args).
		{"a bound parameter too many", &Lag, lagSrc("mp, ds, extra uint64, u *[256]uint8, mem []byte, fr []frame.Frame, out []uint8", lagPre, lagBody, "return rare"), "Args"},
		{"a parameter of another type", &Lag, lagSrc("mp, ds uint64, u *[256]uint8, mem string, fr []frame.Frame, out []uint8", lagPre, lagBody, "return rare"), "parameter mem is string"},
		{"a walked slice not passed", &Lag, lagSrc("mp, ds uint64, u *[256]uint8, mem []byte, fr []frame.Frame, out []uint8, more []uint8", lagPre, lagBody+"\nmore[i] = 1", "return rare"), "walked slice more"},
	} {
		_, _, err := c.p.Loops(Source{"x.go", c.src})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: err %v, want one with %q", c.name, err, c.err)
		}
	}
}

// TestLoopsSkips: a function whose name does not match the package's pattern (the dispatcher
// decodeBatch) is not a loop function; one that does and is not one is an error.
func TestLoopsSkips(t *testing.T) {
	s := string(encSrc(encSig, "", encHead, encBody)) + "\nfunc decodeBatch(fr []frame.Frame) int { return len(fr) }\n"
	if _, names, err := DSA.Loops(Source{"batch.go", []byte(s)}); err != nil || len(names) != 1 || names[0] != "encXBatch" {
		t.Errorf("decodeBatch: loops %v, err %v", names, err)
	}
	s += "\nfunc encYBatch(fr []frame.Frame) int { return len(fr) }\n"
	if _, _, err := DSA.Loops(Source{"batch.go", []byte(s)}); err == nil || !strings.Contains(err.Error(), "encYBatch") {
		t.Errorf("encYBatch: err %v", err)
	}
	if _, _, err := DSA.Loops(Source{"batch.go", []byte("package dsa\n\nfunc decodeBatch() {}\n")}); err == nil {
		t.Error("no loop: no error")
	}
}

// TestLoopsForward: copy k of an iteration reaches fr[k], ins[k] and rs[k] from the advancing
// cursors, a continue jumps to copy k+1, and the first len(fr) % 4 frames run through the body in
// the same function (no call back into decXBatch).
func TestLoopsForward(t *testing.T) {
	out, _, err := DSA.Loops(Source{"batch.go", decSrc("\tlim := tw + 1 // a comment\n", `		f, in := &fr[i], &ins[i]
		if f.Len > 0 { // "&fr[i]" in a comment stays
			*in = Info{Code: uint8(lim)}
			s := "rs[i] = 1"
			_ = s
			continue
		}
		if fr[i].Off == 0 || rs[i] != 0 {
			ins[i].Port = 1
		}
		pp, m := &ins[i].Port, &ins[i]
		*pp, m.Code = 2, 3
		rs[i] = reasonSlow`)})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"//go:noinline\nfunc decXBatchx4(mem []byte, fr []frame.Frame, ins []Info, rs []Reason, tw uint32) {",
		"x4fr, x4ins, x4rs := walk(fr, ins, rs)\n\tlim := tw + 1 // a comment\n",
		"x4k := len(fr) / 4\n\tif x4r := len(fr) % 4; x4r != 0 {",
		"f, in := (*frame.Frame)(x4fr), (*Info)(x4ins)",
		"f, in := (*frame.Frame)(unsafe.Add(x4fr, 3*frameSize)), (*Info)(unsafe.Add(x4ins, 3*infoSize))",
		"if (*frame.Frame)(unsafe.Add(x4fr, 3*frameSize)).Off == 0 || (*(*Reason)(unsafe.Add(x4rs, 3))) != 0 {",
		"(*Info)(unsafe.Add(x4ins, 3*infoSize)).Port = 1",
		"pp, m := &(*Info)(unsafe.Add(x4ins, 3*infoSize)).Port, (*Info)(unsafe.Add(x4ins, 3*infoSize))",
		"*(*Reason)(unsafe.Add(x4rs, 3)) = reasonSlow",
		"goto x4next3", "x4next3:",
		"x4fr, x4ins, x4rs = unsafe.Add(x4fr, 4*frameSize), unsafe.Add(x4ins, 4*infoSize), unsafe.Add(x4rs, 4)",
		"if x4k == 0 {\n\t\t\treturn\n\t\t}", "} else if x4k == 0 {\n\t\treturn\n\t}",
		"goto x4one", "x4one:",
		"x4fr, x4ins, x4rs = unsafe.Add(x4fr, 1*frameSize), unsafe.Add(x4ins, 1*infoSize), unsafe.Add(x4rs, 1)",
		`// "&fr[i]" in a comment stays`, `s := "rs[i] = 1"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "continue") || strings.Contains(s, "decXBatch(") || strings.Count(s, "&fr[i]") != 5 {
		t.Errorf("continue, a call of decXBatch, or &fr[i] outside the comment left in\n%s", s)
	}
	if n := strings.Count(s, "lim := tw + 1"); n != 1 {
		t.Errorf("prologue %d times", n)
	}
}

// TestLoopsBackward: the generated function takes Lag's parameters and binds the loop's others
// from Args; fr's cursor starts at the last frame and steps down, out is reached by the index,
// copy k of an iteration is frame i-k, and the last len(fr) % 4 frames run through the body in
// the same function.
func TestLoopsBackward(t *testing.T) {
	out, _, err := Lag.Loops(Source{"xor.go", lagSrc(lagSig, lagPre, "if fr[i].Len == 0 {\ncontinue\n}\n"+lagBody, "return rare")})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{
		"func xorL2x4(st *snapshot, mem []byte, fr []frame.Frame, out *uint8) (rare uint64) {\n\tmp, ds, u := st.mp, st.ds, &st.members\n\tif len(mem) < l2Win {",
		"lim := int64(len(mem)) - l2Win\n\tif len(fr) == 0 {\n\t\treturn\n\t}\n\tx4fr, x4out := unsafe.Pointer(&fr[len(fr)-1]), unsafe.Pointer(out)\n\ti := len(fr) - 1\n",
		"for x4r := len(fr) % 4; x4r != 0; x4r-- {",
		"x4one:\n\t\tif i == 0 {\n\t\t\treturn\n\t\t}\n\t\tx4fr = unsafe.Add(x4fr, -1*int(frameSize))\n\t\ti--\n",
		"for ; ; i -= 4 {",
		"if f := (*frame.Frame)(x4fr); int64(f.Off) > lim {\n\t\t\t\trare |= 1 << (i & 63)",
		"*(*uint8)(unsafe.Add(x4out, i)) = pick(",
		"if f := (*frame.Frame)(unsafe.Add(x4fr, -3*int(frameSize))); int64(f.Off) > lim {\n\t\t\t\trare |= 1 << ((i - 3) & 63)",
		"*(*uint8)(unsafe.Add(x4out, i-3)) = pick(",
		"if (*frame.Frame)(unsafe.Add(x4fr, -2*int(frameSize))).Len == 0 {\n\t\t\t\tgoto x4next2",
		"if i < 7 {\n\t\t\tbreak\n\t\t}\n\t\tx4fr = unsafe.Add(x4fr, -4*int(frameSize))\n\t}\n\treturn\n}",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "go:noinline") || strings.Contains(s, "panic(") {
		t.Errorf("a go:noinline or a length check in\n%s", s)
	}
}

// TestOffset: the offsets of element k from a cursor and of element i+k from an indexed one.
func TestOffset(t *testing.T) {
	for _, c := range []struct {
		base string
		k    int
		step string
		want string
	}{
		{"", 0, "frameSize", "0*frameSize"},
		{"", 3, "frameSize", "3*frameSize"},
		{"", -3, "frameSize", "-3*int(frameSize)"},
		{"", -2, "1", "-2"},
		{"", 2, "1", "2"},
		{"i", 0, "1", "i"},
		{"i", -1, "1", "i-1"},
		{"i", 0, "infoSize", "i*int(infoSize)"},
		{"i", -2, "infoSize", "(i-2)*int(infoSize)"},
	} {
		if got := offset(c.base, c.k, c.step); got != c.want {
			t.Errorf("offset(%q, %d, %q) = %q, want %q", c.base, c.k, c.step, got, c.want)
		}
	}
}

// TestLoopsOwnSetup: with no Setup for its walked slices, a generated function checks their
// lengths itself (Short) and declares the cursors; a slice passed as a pointer is not checked.
func TestLoopsOwnSetup(t *testing.T) {
	p := DSA
	p.Setup = nil
	out, _, err := p.Loops(Source{"batch.go", src("ins[i] = Info{}\nrs[i] = reasonSlow")})
	if err != nil {
		t.Fatal(err)
	}
	want := "if len(ins) < len(fr) || len(rs) < len(fr) {\n\t\tpanic(errShortResults)\n\t}\n" +
		"\tx4fr, x4ins, x4rs := unsafe.Pointer(unsafe.SliceData(fr)), unsafe.Pointer(unsafe.SliceData(ins)), unsafe.Pointer(unsafe.SliceData(rs))\n"
	if !strings.Contains(string(out), want) {
		t.Errorf("no %q in\n%s", want, out)
	}
	p.Short = ""
	if _, _, err := p.Loops(Source{"batch.go", src("ins[i] = Info{}")}); err == nil || !strings.Contains(err.Error(), "no Short") {
		t.Errorf("no Short: err %v", err)
	}
	p.Params = "mem []byte, fr []frame.Frame, ins *Info, rs []Reason, tw uint32"
	out, _, err = p.Loops(Source{"batch.go", src("ins[i] = Info{}")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "x4fr, x4ins := unsafe.Pointer(unsafe.SliceData(fr)), unsafe.Pointer(ins)\n"; !strings.Contains(string(out), want) || strings.Contains(string(out), "panic") {
		t.Errorf("no %q, or a length check, in\n%s", want, out)
	}
}
