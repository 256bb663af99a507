//go:build !linux

package gen

import (
	"errors"
	"fmt"
)

// Generator sends traffic; AF_PACKET and XDP exist only on Linux.
type Generator struct{}

// Open fails with errors.ErrUnsupported outside Linux.
func Open(cfg *Config) (*Generator, error) {
	return nil, fmt.Errorf("gen: %w", errors.ErrUnsupported)
}

func (g *Generator) Config() Config        { return Config{} }
func (g *Generator) Start()                {}
func (g *Generator) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }
func (g *Generator) Sent() uint64          { return 0 }
func (g *Generator) LastError() error      { return nil }
func (g *Generator) Stop() Result          { return Result{} }
func (g *Generator) Wait() Result          { return Result{} }
