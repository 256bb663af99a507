package ops_test

import (
	"errors"
	"testing"

	"github.com/wirespeed/wirespeed/frame"
	"github.com/wirespeed/wirespeed/ops"
	"github.com/wirespeed/wirespeed/xmit"
)

// errPort fails every call.
type errPort struct{ statsPort }

var errBroken = errors.New("broken")

func (errPort) Recv(b *frame.Batch) (int, error) { return 0, errBroken }
func (errPort) Send(b *frame.Batch) (int, error) { b.Free(); return 0, errBroken }

// TestCountErrors: the wrapper counts what Recv and Send return and keeps the last error; it
// keeps the port's Waiter and LinkStater, and adds neither to a port without them.
func TestCountErrors(t *testing.T) {
	pool, _ := frame.NewPool(&frame.PoolConfig{Buffers: 16})
	a, b := xmit.Pipe(pool, nil)
	defer b.Close()
	var e ops.ErrorLog
	p := ops.CountErrors(a, &e)
	if _, ok := p.(xmit.Waiter); !ok {
		t.Error("a MemPort's wrapper is no Waiter")
	}
	if _, ok := p.(xmit.LinkStater); !ok {
		t.Error("a MemPort's wrapper is no LinkStater")
	}
	batch := frame.NewBatch(4)
	if _, err := p.Recv(batch); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := p.Recv(batch); !errors.Is(err, xmit.ErrClosed) {
		t.Fatalf("Recv after Close: %v", err)
	}
	if c := e.Counts(); c.Recv != 1 || c.Send != 0 || !errors.Is(c.LastRecv, xmit.ErrClosed) || c.LastSend != nil {
		t.Fatalf("counts %+v", c)
	}

	var e2 ops.ErrorLog
	q := ops.CountErrors(errPort{}, &e2)
	if _, ok := q.(xmit.Waiter); ok {
		t.Error("the wrapper of a port without Wait has one")
	}
	if _, ok := q.(xmit.LinkStater); ok {
		t.Error("the wrapper of a port without LinkUp has one")
	}
	for range 3 {
		q.Recv(batch)
		q.Send(batch)
	}
	if c := e2.Counts(); c.Recv != 3 || c.Send != 3 || c.LastSend != errBroken {
		t.Fatalf("counts %+v", c)
	}
}
