// Package lacp is the Link Aggregation Control Protocol (IEEE 802.1AX, formerly 802.3ad clause
// 43) for package lag, following Linux's reading of it in drivers/net/bonding/bond_3ad.c.
//
// # PDUs
//
// LACPDUs and marker PDUs are slow-protocols frames: destination 01:80:c2:00:00:02 (a multicast
// address bridges never forward), EtherType 0x8809, never VLAN-tagged, then a 110-byte PDU
// (bond_3ad.h struct lacpdu and struct bond_marker):
//
//	offset  LACPDU (subtype 1)                      marker PDU (subtype 2)
//	0       subtype 1, version 1                    subtype 2, version 1
//	2       actor TLV: type 1, length 20            TLV: type 1 (information) or 2 (response), length 16
//	4         system priority, system (MAC), key,     requester port, requester system (MAC),
//	          port priority, port, state, 3 zeros     transaction id, 2 zeros
//	22      partner TLV: type 2, length 20, same    terminator (0, 0), 90 zeros
//	42      collector TLV: type 3, length 16,
//	          max delay, 12 zeros
//	58      terminator (0, 0), 50 zeros
//
// DecodeFrame reads either from a whole frame; PutLACPFrame and PutMarkerFrame write them. The
// decoders never panic and refuse what they cannot read with ErrTruncated, ErrNotSlow, ErrSubtype
// or ErrTLV.
package lacp
