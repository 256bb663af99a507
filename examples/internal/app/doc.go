// Package app holds what the wirespeed examples share beyond the forwarding step: the I/O back-end
// choice and opening real interfaces once per worker (Backend, Open), the worker loop (Run), static
// neighbour MACs (ParseNeighbours), the pcap tap (Pcap), and the final accounting report (Tally).
//
// It is internal to the examples: small, readable, and changed with them.
package app
