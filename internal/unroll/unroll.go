// Package unroll writes the four-frames-per-iteration copies of the batch loops of dsa
// (batch_x4.go, from batch.go and the tag_*.go files) and lag (xor_unrolled.go, from xor.go):
// `go generate ./dsa` and `go generate ./lag` run its gen command (gen dsa, gen lag), and each
// package's TestUnrolled fails when its file is stale. What differs between the two packages
// (their files, the loops' names, the walk, the generated signature) is a Package value here;
// the form of a loop is one.
//
// # The form of a batch loop
//
// Every function of the package's source files whose name matches the package's Loop pattern is a
// loop function and must have this form, or Generate fails (nothing is skipped):
//
//	func name(params) [(named results)] {
//		... statements (the prologue) ...
//		for i := range fr {
//			body
//		}
//		[return results]
//	}
//
// fr is the package's frame slice (Package.Frames, a []frame.Frame parameter); i may have any
// name. A walked slice is fr or any other slice parameter the body indexes by i. The body reaches
// frame i only in these forms:
//
//	&s[i]          the element of walked slice s, a pointer (f := &fr[i]; slow(&rs[i]))
//	s[i]           the element itself, read or written (fr[i].Len, out[i] = member)
//	1 << (i & 63)  the frame's bit in a 64-bit set (backward walk only)
//
// and leaves by continue or by its end: it must not mention i or a walked slice otherwise (not
// len(fr), not s[i+1]), nor hold break, goto, return, fallthrough, a labelled continue, a loop or
// a closure (checked on its tokens; a label cannot be there without a jump to it). The prologue
// must not assign to, into or take the address of a parameter; it may return. A function with
// results names them and ends, after the loop, with a return of them (bare or spelled out in
// order). Neither part may use an identifier that starts with "x4" (the generated code's own
// names). Each frame's work must not depend on the frames before it (the backward walk visits
// them last to first): a body that accumulates into a variable of the prologue does so by an
// order-free operation (rare |= bit).
//
// The source loops are the readable one-frame form: bounds-checked and indexed, they run only in
// the packages' tests (each package's TestLoopsEqualUnrolled compares them with the generated
// copies on random batches of every length).
//
// # The generated copies
//
// The generated <name>x4 takes the package's parameters (Package.Params, or the loop's own; a
// loop's other parameters are bound from Package.Args), runs the same prologue, and turns every
// walked slice into a cursor x4<s>, a pointer: &s[i] becomes (*T)(unsafe.Add(x4s, offset)) and
// s[i] a load or store through it. The cursors come from the package's Setup statement for the
// loop's walked slices, or else from a check that each one passed as a slice holds len(fr)
// elements (panic(Package.Short)) and its first element. The batch is walked one of two ways
// (Package.Walk), each chosen by the instructions per frame of its package's loops
// (bench/notes/dsa.md, bench/notes/lag.md):
//
//   - Forward (dsa): the first len(fr) % 4 frames go through the body once each, then each
//     iteration runs four copies of the body, frame k at the constant offset k * step of every
//     cursor, and advances every cursor by four elements. A down-counter of iterations ends the
//     loop; the frame index is never formed, so every walked slice is a pointer that advances (an
//     Info of 16 bytes or more cannot be reached as base + index in one address).
//   - Backward (lag): fr's cursor starts at the last frame and steps down; the other walked slices
//     stay at their base and are reached by the index i (base + i for one-byte elements, the
//     out[i] of a member choice). After the prologue and a return for an empty batch, the last
//     len(fr) % 4 frames go through the body once each, then each iteration runs copies i, i-1,
//     i-2, i-3 and ends when i < 7: the exit compares i with a constant, so the loop keeps one
//     counter, which is also the index and the rare bit's shift, and no length; the lag loops,
//     short of registers, keep their window limit in one.
//
// In both, copy k of an iteration is the body in its own block with continue turned into a jump to
// copy k+1, the remainder runs in the same function (calling the one-frame loop for it costs a
// call, spills and a second prologue), and no pointer past the batch is formed: each loop leaves
// before an advance it does not need. The form is an index loop rather than either walk so that
// one source form reads the same in both packages and maps onto either walk by rewriting its few
// forms; a walk's own names (fb, p, fp) in the source would tie the source to that walk.
package unroll

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Walk is the order and shape of a generated loop (see the package doc).
type Walk int

const (
	Forward Walk = iota
	Backward
)

// Factor is the number of frames per iteration of the generated loops.
const Factor = 4

const genPrefix = "x4"

// Package is what Generate needs to know of a package beyond the form of its loops.
type Package struct {
	Name   string         // the package clause
	Out    string         // the generated file
	Files  []string       // the source files, globs, in this order (each glob's matches sorted; _test.go left out)
	Loop   *regexp.Regexp // the names of the loop functions
	Frames string         // the frame slice parameter the loops range over
	Walk   Walk
	// Steps is the size of the element of each walked slice, by element type: a constant
	// expression of the package ("frameSize") or "1".
	Steps map[string]string
	// Params is the parameter list of the generated functions ("" for each loop's own); a slice
	// parameter may be passed as a pointer to its first element (out *uint8).
	Params string
	// Args binds, per loop, the parameters of the loop that Params does not hold, in order.
	Args map[string]string
	// Short is the panic value of a generated function given a walked slice shorter than fr.
	Short string
	// Setup is, by the walked slices of a loop (in the order of its parameters, joined by
	// commas), the package's own statement that checks their lengths and declares the cursors
	// x4<slice> at their first elements, in place of the generated check and declaration
	// (Forward only).
	Setup    map[string]string
	NoInline bool     // mark the generated functions go:noinline
	Imports  []string // the generated file's imports
}

// DSA is package dsa's batch codecs.
var DSA = Package{
	Name:   "dsa",
	Out:    "batch_x4.go",
	Files:  []string{"batch.go", "tag_*.go"},
	Loop:   regexp.MustCompile(`^(dec|enc)[A-Z0-9]\w*Batch$`),
	Frames: "fr",
	Walk:   Forward,
	Steps:  map[string]string{"frame.Frame": "frameSize", "Info": "infoSize", "Reason": "1"},
	Short:  "errShortResults",
	// walk and frames (batch.go) check the lengths and return the cursors.
	Setup: map[string]string{
		"fr,ins,rs": "x4fr, x4ins, x4rs := walk(fr, ins, rs)",
		"fr,rs":     "x4fr, x4rs := frames(fr, rs)",
	},
	// Inlined into its caller, a loop shares the register allocation of a larger function and
	// spills.
	NoInline: true,
	Imports:  []string{"unsafe", "", "github.com/wirespeed/wirespeed/frame"},
}

// Lag is package lag's XOR-mode member choice: each loop takes its constants from the snapshot
// st (8 words of arguments in registers, where the loops' own 12 put 3 on the stack) and writes
// the members through a pointer.
var Lag = Package{
	Name:   "lag",
	Out:    "xor_unrolled.go",
	Files:  []string{"xor.go"},
	Loop:   regexp.MustCompile(`^xor(L2|SrcMAC|L34|L23|E23)(Table)?$`),
	Frames: "fr",
	Walk:   Backward,
	Steps:  map[string]string{"frame.Frame": "frameSize", "uint8": "1"},
	Params: "st *snapshot, mem []byte, fr []frame.Frame, out *uint8",
	Args: map[string]string{
		"xorL2":          "st.mp, st.ds, &st.members",
		"xorL2Table":     "st.table",
		"xorSrcMAC":      "st.mp >> 8, st.ds >> 8, &st.members",
		"xorSrcMACTable": "st.table",
		"xorL34":         "st.mp >> 1, st.ds, &st.half",
		"xorL34Table":    "st.table",
		"xorL23":         "st.mp, st.ds, &st.members",
		"xorL23Table":    "st.table",
		"xorE23":         "st.mp, st.ds, &st.members",
		"xorE23Table":    "st.table",
	},
	Imports: []string{"encoding/binary", "unsafe", "", "github.com/wirespeed/wirespeed/frame"},
}

// Packages are the packages whose loops Generate unrolls, by name.
var Packages = map[string]*Package{"dsa": &DSA, "lag": &Lag}

// Source is one source file: its name and its text.
type Source struct {
	Name string
	Src  []byte
}

// Sources reads p's source files from dir.
func (p *Package) Sources(dir string) ([]Source, error) {
	var srcs []Source
	for _, g := range p.Files {
		names, err := filepath.Glob(filepath.Join(dir, g))
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("no file %s in %s", g, dir)
		}
		sort.Strings(names)
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			b, err := os.ReadFile(n)
			if err != nil {
				return nil, err
			}
			srcs = append(srcs, Source{Name: filepath.Base(n), Src: b})
		}
	}
	return srcs, nil
}

// Generate returns p.Out for the package in dir.
func (p *Package) Generate(dir string) ([]byte, error) {
	srcs, err := p.Sources(dir)
	if err != nil {
		return nil, err
	}
	out, _, err := p.Loops(srcs...)
	return out, err
}

// Loops returns the generated file for srcs, and the names of the loop functions, in the order
// of the files and, within a file, of the source.
func (p *Package) Loops(srcs ...Source) ([]byte, []string, error) {
	var out bytes.Buffer
	fmt.Fprintf(&out, "// Code generated by internal/unroll from the batch loops of package %s (go generate ./%s); DO NOT EDIT.\n\n", p.Name, p.Name)
	fmt.Fprintf(&out, "package %s\n\nimport (\n", p.Name)
	for _, im := range p.Imports {
		if im == "" {
			out.WriteString("\n")
		} else {
			fmt.Fprintf(&out, "\t%q\n", im)
		}
	}
	out.WriteString(")\n")
	var names []string
	for _, s := range srcs {
		n, err := p.fileLoops(&out, s.Name, s.Src)
		if err != nil {
			return nil, nil, err
		}
		names = append(names, n...)
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("no loop to unroll")
	}
	b, err := format.Source(out.Bytes())
	return b, names, err
}

// cursor is a walked slice of one loop.
type cursor struct {
	slice, elem, step string
	ptr               bool // passed to the generated function as a pointer to its first element
	indexed           bool // reached as base + index (the backward walk's slices other than fr)
}

func (c *cursor) name() string { return genPrefix + c.slice }

// loop is one loop function, parsed and checked.
type loop struct {
	name     string
	params   string   // of the generated function
	bind     string   // "a, b := x, y" for the parameters bound from Args, or ""
	results  string   // "(rare uint64)" or ""
	prologue string   // the source's, verbatim
	index    string   // the loop variable
	body     string   // the loop body's text
	curs     []cursor // in the order of the parameters
}

// fileLoops writes the unrolled copy of every loop function of one file to out and returns their
// names.
func (p *Package) fileLoops(out *bytes.Buffer, filename string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filename, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range file.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || !p.Loop.MatchString(fn.Name.Name) {
			continue
		}
		l, err := p.parse(fset, src, fn)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", fn.Name.Name, err)
		}
		if err := p.write(out, l); err != nil {
			return nil, fmt.Errorf("%s: %v", fn.Name.Name, err)
		}
		names = append(names, l.name)
	}
	return names, nil
}

// parse checks that fn has the form of a loop function and returns its parts.
func (p *Package) parse(fset *token.FileSet, src []byte, fn *ast.FuncDecl) (*loop, error) {
	text := func(from, to token.Pos) string {
		return string(src[fset.Position(from).Offset:fset.Position(to).Offset])
	}
	l := &loop{name: fn.Name.Name}
	if fn.Recv != nil {
		return nil, fmt.Errorf("a method")
	}
	if fn.Type.TypeParams != nil {
		return nil, fmt.Errorf("generic")
	}
	list := fn.Body.List
	if res := fn.Type.Results; res != nil {
		for _, f := range res.List {
			if len(f.Names) == 0 {
				return nil, fmt.Errorf("unnamed results")
			}
		}
		l.results = text(res.Pos(), res.End())
		var named []string
		for _, f := range res.List {
			for _, id := range f.Names {
				named = append(named, id.Name)
			}
		}
		r, ok := ast.Stmt(nil), false
		if len(list) > 0 {
			r = list[len(list)-1]
			ret, _ := r.(*ast.ReturnStmt)
			ok = ret != nil && (len(ret.Results) == 0 || text(ret.Results[0].Pos(), ret.Results[len(ret.Results)-1].End()) == strings.Join(named, ", "))
		}
		if !ok {
			return nil, fmt.Errorf("the loop is not followed by return or return %s", strings.Join(named, ", "))
		}
		list = list[:len(list)-1]
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("no loop")
	}
	rng, ok := list[len(list)-1].(*ast.RangeStmt)
	if !ok {
		return nil, fmt.Errorf("the last statement is not the loop (for i := range %s)", p.Frames)
	}
	key, _ := rng.Key.(*ast.Ident)
	if x, _ := rng.X.(*ast.Ident); key == nil || key.Name == "_" || rng.Value != nil || rng.Tok != token.DEFINE || x == nil || x.Name != p.Frames {
		return nil, fmt.Errorf("the loop header is %q, not for i := range %s", text(rng.Pos(), rng.Body.Lbrace+1), p.Frames)
	}
	l.index = key.Name

	// The parameters, and the walked slices among them.
	var params, args []string
	types := map[string]string{}
	for _, f := range fn.Type.Params.List {
		typ := text(f.Type.Pos(), f.Type.End())
		for _, id := range f.Names {
			params = append(params, id.Name+" "+typ)
			args = append(args, id.Name)
			types[id.Name] = typ
		}
	}
	if types[p.Frames] != "[]frame.Frame" {
		return nil, fmt.Errorf("no parameter %s []frame.Frame", p.Frames)
	}
	pre := list[:len(list)-1]
	if err := checkPrologue(pre, args); err != nil {
		return nil, fmt.Errorf("prologue: %v", err)
	}
	if len(pre) > 0 {
		l.prologue = text(pre[0].Pos(), rng.Pos())
	}
	l.body = text(rng.Body.Lbrace+1, rng.Body.Rbrace)
	walked, err := walkedSlices(l.body, l.index, types)
	if err != nil {
		return nil, err
	}
	walked[p.Frames] = true

	// The generated function's parameters.
	gen := map[string]string{} // name -> type in the generated function
	l.params = strings.Join(params, ", ")
	if p.Params != "" {
		l.params = p.Params
		ft, err := parser.ParseExpr("func(" + p.Params + ")")
		if err != nil {
			return nil, fmt.Errorf("Params: %v", err)
		}
		for _, f := range ft.(*ast.FuncType).Params.List {
			for _, id := range f.Names {
				gen[id.Name] = p.Params[f.Type.Pos()-ft.Pos()-5 : f.Type.End()-ft.Pos()-5]
			}
		}
		var bound []string
		for _, a := range args {
			if t, ok := gen[a]; ok {
				if t != types[a] && !(strings.HasPrefix(types[a], "[]") && t == "*"+types[a][2:]) {
					return nil, fmt.Errorf("parameter %s is %s, the generated function's %s", a, types[a], t)
				}
				continue
			}
			if walked[a] {
				return nil, fmt.Errorf("walked slice %s not a parameter of the generated function", a)
			}
			bound = append(bound, a)
		}
		if len(bound) > 0 {
			from, ok := p.Args[l.name]
			if !ok {
				return nil, fmt.Errorf("no Args for %s", strings.Join(bound, ", "))
			}
			call, err := parser.ParseExpr("f(" + from + ")")
			if err != nil {
				return nil, fmt.Errorf("Args %q: %v", from, err)
			}
			if n := len(call.(*ast.CallExpr).Args); n != len(bound) {
				return nil, fmt.Errorf("Args %q for %d parameters (%s)", from, len(bound), strings.Join(bound, ", "))
			}
			l.bind = strings.Join(bound, ", ") + " := " + from
		}
	} else {
		for _, a := range args {
			gen[a] = types[a]
		}
	}
	for _, a := range args {
		if !walked[a] {
			continue
		}
		elem := strings.TrimPrefix(types[a], "[]")
		step, ok := p.Steps[elem]
		if !ok {
			return nil, fmt.Errorf("no step for %s's element %s", a, elem)
		}
		l.curs = append(l.curs, cursor{
			slice: a, elem: elem, step: step,
			ptr:     strings.HasPrefix(gen[a], "*"),
			indexed: p.Walk == Backward && a != p.Frames,
		})
	}
	return l, nil
}

// walkedSlices returns the slice parameters the body indexes by the loop variable.
func walkedSlices(body, index string, types map[string]string) (map[string]bool, error) {
	toks, err := tokens(body)
	if err != nil {
		return nil, err
	}
	w := map[string]bool{}
	for i := range toks {
		if i+3 < len(toks) && toks[i].tok == token.IDENT && toks[i+1].lit == "[" && toks[i+2].tok == token.IDENT &&
			toks[i+2].lit == index && toks[i+3].lit == "]" && strings.HasPrefix(types[toks[i].lit], "[]") {
			w[toks[i].lit] = true
		}
	}
	return w, nil
}

// checkPrologue refuses a prologue that assigns to or takes the address of a parameter (the
// generated function derives its cursors from them), or uses a generated name.
func checkPrologue(pre []ast.Stmt, params []string) error {
	guarded := map[string]bool{}
	for _, p := range params {
		guarded[p] = true
	}
	// root is the variable an assignment to e writes into (x of x.f, x[i], *x, (x)).
	var root func(e ast.Expr) *ast.Ident
	root = func(e ast.Expr) *ast.Ident {
		switch e := e.(type) {
		case *ast.Ident:
			return e
		case *ast.SelectorExpr:
			return root(e.X)
		case *ast.IndexExpr:
			return root(e.X)
		case *ast.IndexListExpr:
			return root(e.X)
		case *ast.SliceExpr:
			return root(e.X)
		case *ast.StarExpr:
			return root(e.X)
		case *ast.ParenExpr:
			return root(e.X)
		}
		return nil
	}
	var err error
	written := func(e ast.Expr) {
		if id := root(e); id != nil && guarded[id.Name] && err == nil {
			err = fmt.Errorf("writes %s", id.Name)
		}
	}
	for _, s := range pre {
		ast.Inspect(s, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				if strings.HasPrefix(n.Name, genPrefix) && err == nil {
					err = fmt.Errorf("uses %s (the generated code's names start with %s)", n.Name, genPrefix)
				}
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					written(l)
				}
			case *ast.IncDecStmt:
				written(n.X)
			case *ast.RangeStmt:
				if n.Tok == token.ASSIGN {
					written(n.Key)
					if n.Value != nil {
						written(n.Value)
					}
				}
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					written(n.X)
				}
			}
			return err == nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// tk is one token of a fragment and its offset there.
type tk struct {
	off int
	tok token.Token
	lit string
}

// tokens scans a Go fragment; operators and keywords carry their spelling in lit.
func tokens(src string) ([]tk, error) {
	var s scanner.Scanner
	fset := token.NewFileSet()
	f := fset.AddFile("", -1, len(src))
	var serr error
	s.Init(f, []byte(src), func(_ token.Position, msg string) { serr = fmt.Errorf("scan: %s", msg) }, 0)
	var toks []tk
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue // an automatic semicolon
		}
		if tok.IsOperator() || tok.IsKeyword() {
			lit = tok.String()
		}
		toks = append(toks, tk{f.Offset(pos), tok, lit})
	}
	return toks, serr
}

// offset is the offset of element k from a cursor's position (negative: back), or, for an
// indexed cursor (base the loop variable), of element base+k from the slice's start.
func offset(base string, k int, step string) string {
	switch {
	case base == "" && step == "1":
		return fmt.Sprint(k)
	case base == "" && k < 0:
		return fmt.Sprintf("%d*int(%s)", k, step)
	case base == "":
		return fmt.Sprintf("%d*%s", k, step)
	case k != 0:
		base = fmt.Sprintf("%s%+d", base, k)
	}
	if step == "1" {
		return base
	}
	if k != 0 {
		base = "(" + base + ")"
	}
	return base + "*int(" + step + ")"
}

func isAssign(t token.Token) bool {
	switch t {
	case token.ASSIGN, token.ADD_ASSIGN, token.SUB_ASSIGN, token.MUL_ASSIGN, token.QUO_ASSIGN, token.REM_ASSIGN,
		token.AND_ASSIGN, token.OR_ASSIGN, token.XOR_ASSIGN, token.SHL_ASSIGN, token.SHR_ASSIGN, token.AND_NOT_ASSIGN,
		token.INC, token.DEC:
		return true
	}
	return false
}

// copyOf is the body as the copy for the frame k elements on from the cursors' positions
// (negative: back), with continue turned into goto label; jumps reports a continue. The forms are
// rewritten on the body's tokens (not in its comments or strings); any other mention of the loop
// variable or a walked slice is an error.
func (l *loop) copyOf(walk Walk, k int, label string) (string, bool, error) {
	toks, err := tokens(l.body)
	if err != nil {
		return "", false, err
	}
	curs := map[string]*cursor{}
	for i := range l.curs {
		curs[l.curs[i].slice] = &l.curs[i]
	}
	// match reports whether the tokens from i spell want.
	match := func(i int, want ...string) bool {
		if i+len(want) > len(toks) {
			return false
		}
		for j, w := range want {
			if toks[i+j].lit != w || toks[i+j].tok == token.STRING || toks[i+j].tok == token.CHAR {
				return false
			}
		}
		return true
	}
	ptr := func(c *cursor) string {
		switch {
		case c.indexed:
			return fmt.Sprintf("(*%s)(unsafe.Add(%s, %s))", c.elem, c.name(), offset(l.index, k, c.step))
		case k == 0:
			return fmt.Sprintf("(*%s)(%s)", c.elem, c.name())
		}
		return fmt.Sprintf("(*%s)(unsafe.Add(%s, %s))", c.elem, c.name(), offset("", k, c.step))
	}
	var b strings.Builder
	last, jumps := 0, false
	// emit replaces tokens from..to with s.
	emit := func(from, to int, s string) {
		b.WriteString(l.body[last:toks[from].off])
		b.WriteString(s)
		last = toks[to].off + len(toks[to].lit)
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.tok == token.IDENT && curs[t.lit] != nil && match(i+1, "[", l.index, "]") {
			c := curs[t.lit]
			var next token.Token
			if i+4 < len(toks) {
				next = toks[i+4].tok
			}
			switch {
			case next == token.PERIOD:
				emit(i, i+3, ptr(c)) // a selector dereferences the pointer itself (&s[i].f keeps its &)
			case next != token.LBRACK && i > 0 && toks[i-1].tok == token.AND && toks[i-1].off >= last:
				emit(i-1, i+3, ptr(c))
			case isAssign(next):
				emit(i, i+3, "*"+ptr(c))
			default:
				emit(i, i+3, "(*"+ptr(c)+")")
			}
			i += 3
			continue
		}
		if toks[i].tok == token.INT && match(i, "1", "<<", "(", l.index, "&", "63", ")") {
			if walk != Backward {
				return "", false, fmt.Errorf("body uses 1 << (%s & 63) in a forward walk", l.index)
			}
			if k == 0 {
				emit(i, i+6, fmt.Sprintf("1 << (%s & 63)", l.index))
			} else {
				emit(i, i+6, fmt.Sprintf("1 << ((%s%+d) & 63)", l.index, k))
			}
			i += 6
			continue
		}
		switch {
		case t.tok == token.IDENT && (t.lit == l.index || curs[t.lit] != nil):
			return "", false, fmt.Errorf("body uses %s beyond the forms", t.lit)
		case t.tok == token.IDENT && strings.HasPrefix(t.lit, genPrefix):
			return "", false, fmt.Errorf("body uses %s (the generated code's names start with %s)", t.lit, genPrefix)
		case t.tok == token.BREAK || t.tok == token.GOTO || t.tok == token.RETURN || t.tok == token.FALLTHROUGH ||
			t.tok == token.FOR || t.tok == token.FUNC:
			return "", false, fmt.Errorf("body holds %s", t.tok)
		case t.tok == token.CONTINUE:
			if i+1 < len(toks) && toks[i+1].tok == token.IDENT {
				return "", false, fmt.Errorf("labelled continue")
			}
			emit(i, i, "goto "+label)
			jumps = true
		}
	}
	b.WriteString(l.body[last:])
	return b.String(), jumps, nil
}

// write writes the generated copy of l.
func (p *Package) write(out *bytes.Buffer, l *loop) error {
	w := func(format string, a ...any) { fmt.Fprintf(out, format, a...) }
	body := func(k int, label string) (string, bool, error) { return l.copyOf(p.Walk, k, label) }
	if p.Walk == Forward {
		w("\n// %sx4 is %s four frames per iteration, the first len(%s) %% 4 one by one.\n", l.name, l.name, p.Frames)
	} else {
		w("\n// %sx4 is %s four frames per iteration, the last len(%s) %% 4 one by one.\n", l.name, l.name, p.Frames)
	}
	if p.NoInline {
		w("//\n//go:noinline\n")
	}
	w("func %sx4(%s) %s {\n", l.name, l.params, l.results)
	if l.bind != "" {
		w("\t%s\n", l.bind)
	}
	var short, walked []string
	for _, c := range l.curs {
		walked = append(walked, c.slice)
		if c.slice != p.Frames && !c.ptr {
			short = append(short, fmt.Sprintf("len(%s) < len(%s)", c.slice, p.Frames))
		}
	}
	setup, own := p.Setup[strings.Join(walked, ",")]
	if own && p.Walk != Forward {
		return fmt.Errorf("a Setup in a backward walk")
	}
	if own {
		w("\t%s\n", setup)
		short = nil
	}
	if len(short) > 0 {
		if p.Short == "" {
			return fmt.Errorf("a walked slice to check and no Short")
		}
		w("\tif %s {\n\t\tpanic(%s)\n\t}\n", strings.Join(short, " || "), p.Short)
	}
	if p.Walk == Backward {
		// The prologue first: a cursor set up before it is live across it.
		out.WriteString(l.prologue)
		w("\tif len(%s) == 0 {\n\t\treturn\n\t}\n", p.Frames)
	}
	var names, inits []string
	for _, c := range l.curs {
		names = append(names, c.name())
		switch {
		case c.slice == p.Frames && p.Walk == Backward:
			inits = append(inits, fmt.Sprintf("unsafe.Pointer(&%s[len(%s)-1])", c.slice, c.slice))
		case c.ptr:
			inits = append(inits, fmt.Sprintf("unsafe.Pointer(%s)", c.slice))
		default:
			inits = append(inits, fmt.Sprintf("unsafe.Pointer(unsafe.SliceData(%s))", c.slice))
		}
	}
	if !own {
		w("\t%s := %s\n", strings.Join(names, ", "), strings.Join(inits, ", "))
	}
	if p.Walk == Forward {
		out.WriteString(l.prologue)
	}
	// advance moves the cursors that move k elements on (negative: back).
	advance := func(k int) string {
		var lhs, rhs []string
		for _, c := range l.curs {
			if c.indexed {
				continue
			}
			lhs = append(lhs, c.name())
			rhs = append(rhs, fmt.Sprintf("unsafe.Add(%s, %s)", c.name(), offset("", k, c.step)))
		}
		return strings.Join(lhs, ", ") + " = " + strings.Join(rhs, ", ") + "\n"
	}
	one, oneJumps, err := body(0, genPrefix+"one")
	if err != nil {
		return err
	}
	if p.Walk == Forward {
		// The first len(fr) % 4 frames one by one, then four per iteration: nothing but the
		// cursors and the counter is live across the four-frame loop (a remainder run after it
		// would keep len(fr) live there).
		w("\tx4k := len(%s) / %d\n\tif x4r := len(%s) %% %d; x4r != 0 {\n\t\tfor {\n\t\t\t{%s}\n", p.Frames, Factor, p.Frames, Factor, one)
		if oneJumps {
			w("\t\tx4one:\n")
		}
		w("\t\t\tif x4r--; x4r == 0 {\n\t\t\t\tbreak\n\t\t\t}\n\t\t\t%s\t\t}\n", advance(1))
		w("\t\tif x4k == 0 {\n\t\t\treturn\n\t\t}\n\t\t%s\t} else if x4k == 0 {\n\t\treturn\n\t}\n\tfor {\n", advance(1))
		for k := range Factor {
			label := fmt.Sprintf("x4next%d", k)
			b, jumps, err := body(k, label)
			if err != nil {
				return err
			}
			w("\t\t{%s}\n", b)
			if jumps {
				w("\t%s:\n", label)
			}
		}
		w("\t\tif x4k--; x4k == 0 {\n\t\t\tbreak\n\t\t}\n\t\t%s\t}\n", advance(Factor))
	} else {
		// The last len(fr) % 4 frames one by one, then four per iteration, down to frame 0: the
		// index is the only counter.
		w("\t%s := len(%s) - 1\n\tfor x4r := len(%s) %% %d; x4r != 0; x4r-- {\n\t\t{%s}\n", l.index, p.Frames, p.Frames, Factor, one)
		if oneJumps {
			w("\tx4one:\n")
		}
		w("\t\tif %s == 0 {\n\t\t\treturn\n\t\t}\n\t\t%s\t\t%s--\n\t}\n", l.index, advance(-1), l.index)
		w("\tfor ; ; %s -= %d {\n", l.index, Factor)
		for k := range Factor {
			label := fmt.Sprintf("x4next%d", k)
			b, jumps, err := body(-k, label)
			if err != nil {
				return err
			}
			w("\t\t{%s}\n", b)
			if jumps {
				w("\t%s:\n", label)
			}
		}
		w("\t\tif %s < %d {\n\t\t\tbreak\n\t\t}\n\t\t%s\t}\n", l.index, 2*Factor-1, advance(-Factor))
	}
	if l.results != "" {
		w("\treturn\n")
	}
	w("}\n")
	return nil
}
