// Package fib is an IPv4 forwarding table: longest-prefix match from an address to a next-hop index, and a
// table from next-hop index to what the forwarding path needs (egress interface, MACs, VLAN and DSA tags).
//
// Table is a Poptrie (Asai and Ohara, "Poptrie: A Compressed Trie with Population Count for Fast and
// Scalable Software IP Routing Table Lookup", SIGCOMM 2015): a direct-pointing array indexed by the top 18
// bits of the address, then nodes with 6-bit strides whose two 64-bit vectors, with a population count,
// index the node's children and its run-length compressed leaves in flat arrays. A first-level node (the
// one a direct-pointing entry names, which answers prefixes up to /24) is stored with its own leaves right
// behind its leaf vector, without a child vector when it has no children (most of them), and not across
// two cache lines when it fits in one, so that a lookup ending there usually reads the node and the leaf
// from one cache line. A full Internet table (about 900,000 prefixes) takes under 5 bytes per prefix of
// lookup data, which mostly stays in the CPU caches. All lookup data are pointer-free arrays, so the garbage collector has nothing to scan there.
//
// LookupBatch walks 32 addresses at once, stage by stage (all direct-pointing entries, then all
// first-level nodes with their leaves, then the rare deeper walks), so that their memory loads overlap; on
// traffic that misses the caches it is several times faster per address than single lookups. On amd64 CPUs
// with POPCNT (all since 2008) its first two stages are an assembly loop that keeps every lane's state in
// registers, about half the instructions of the Go form; the build tag purego selects the Go form, which
// other architectures use. Lookups never lock
// and never write shared memory: a writer builds the changed parts of a new version beside the current one
// and publishes it with one atomic store (read-copy-update, with the garbage collector as the grace
// period), so a reader sees the table before or after an update, never a mix. Apply publishes a batch of
// changes at once; Replace (and Load, LoadIPRoute) builds a whole table in bulk.
//
// Next hops are indices 0..MaxNextHop. NextHops maps them to NextHop entries with the same discipline:
// entries are immutable and replaced whole, and a forwarding worker reads them through one View per batch,
// without a reference count (the lesson of Linux's per-packet dst refcounts). An entry can be an ECMP
// group (NextHopChange.Members, flagged NextHopGroup) of plain next hops with weights; Pick chooses
// a flow's member from its hash, weighted, without allocating.
//
// ParseRoutes reads "a.b.c.d/len [nexthop]" lines, gzip-compressed or not; ParseIPRoute reads the output of
// `ip -4 route show` or `ip route show table all` (skipping the IPv6 routes). Both are all or nothing and
// report the line number and the word of the first bad line.
package fib
