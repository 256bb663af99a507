// Package vlan parses, pushes, pops and rewrites IEEE 802.1Q (C-tag, TPID 0x8100) and 802.1ad
// (S-tag, 0x88a8; QinQ) VLAN tags in place, and maps (port, outer VID[, inner VID]) to logical
// interfaces and back.
//
// Everything works on frames of a frame.Batch, in place, without allocating: pushing a tag takes 4
// bytes of the frame's headroom and moves the 12 MAC bytes, never the payload; popping moves them
// back. The per-frame functions cost a few nanoseconds; the Demux's Worker runs them over a whole
// batch.
//
// Tags the kernel reports out of band (an AF_PACKET socket's tp_vlan_tci/tp_vlan_tpid, carried in
// frame.Frame's TPID and TCI with frame.FlagVLAN) are first-class: Outer, Pop and SetTCI read and
// write them without touching the bytes, Reinsert puts them back in the frame, and the Demux
// classifies by them exactly as by an in-band tag.
//
// A router that replaces the whole L2 header anyway (new MAC addresses on every hop) classifies with
// Worker.ClassifyInPlace, which moves no byte, and writes the egress header with Worker.Apply and a
// Rewrite: the complete header of one interface towards one neighbour (addresses, tags, EtherType),
// built once by Demux.Rewrite and laid over the old header with one fixed-size copy, so tagged and
// untagged egress cost the same (VPP's adjacency rewrite; a Linux neighbour's cached header).
// Worker.Encap does the same job field by field when no Rewrite is at hand.
//
// Linux behaviours kept: VID 4095 is reserved and no interface may have it (frames carrying it are
// counted as unknown); VID 0 is a priority tag, not a VLAN: the demux strips it and classifies the
// frame by what follows; a frame left shorter than 60 bytes by Pop is zero-padded when it has the
// tailroom. Parse reports at most two tags (QinQ); extra TPIDs such as 0x9100 are recognised only by a
// Parser made with NewParser.
//
// The fuzz targets hold Parse, Push, Pop and SetTCI to gopacket's Ethernet and Dot1Q decoders and
// to their general paths, and ClassifyInPlace's fast loops to its general path; scripts/fuzz.sh
// vlan 10s runs them all with the flags that keep the fuzzer searching (-fuzzminimizetime 200x).
package vlan
