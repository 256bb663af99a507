package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vishvananda/netns"

	"github.com/wirespeed/wirespeed/linuxcp"
)

// startMirror starts the netlink mirror (linuxcp.Mirror) of the TAPs: the kernel's routes through
// them (table main, and the local table for the router's own addresses) into pr.routes, its
// neighbours on them into the stage's next hops, interface i being TAP c.taps[i]. The mirror reads
// the network namespace of the calling thread (the ports'), from a goroutine of its own; startMirror
// returns once the first dump is in the tables.
func startMirror(c *cpRouter, pr *parts, log *slog.Logger) error {
	ns, err := netns.Get()
	if err != nil {
		return fmt.Errorf("linux-cp: mirror: this thread's network namespace: %w", err)
	}
	ifaces := map[int]uint16{}
	for i, t := range c.taps {
		ifaces[t.Ifindex()] = uint16(i)
	}
	m, err := linuxcp.NewMirror(&linuxcp.MirrorConfig{
		Source: &linuxcp.NetlinkSource{NS: ns}, Ifaces: ifaces, Routes: pr.routes, NextHops: pr.router.NextHops(),
		NextHopBase: uint32(len(c.taps)), // 0..ports-1 are buildCP's
		Logf:        func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) },
	})
	if err != nil {
		ns.Close()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	c.mirror = closer(func() error {
		cancel()
		err := <-done
		ns.Close()
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	})
	c.stats = func() string {
		s := m.Stats()
		return fmt.Sprintf("%d routes, %d next hops; %d kernel updates in %d batches, %d route changes, %d resyncs (%d after errors)",
			s.Routes, s.NextHops, s.Updates, s.Batches, s.Changes, s.Resyncs, s.Errors)
	}
	select {
	case <-m.Synced():
	case err := <-done:
		done <- err
		return fmt.Errorf("linux-cp: mirror: %w", err)
	case <-time.After(10 * time.Second):
		return errors.New("linux-cp: mirror: no dump of the kernel's tables within 10 s")
	}
	log.Info("linux-cp: mirror synced", "stats", c.stats())
	return nil
}

type closer func() error

func (f closer) Close() error { return f() }
