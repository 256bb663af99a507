// Package dsa encodes and decodes the tags Ethernet switch chips put on frames they exchange
// with the CPU port (Linux's net/dsa taggers), in user space, in place and without allocating,
// so that a forwarder reading the conduit interface knows which front port a frame came from and
// can send a frame out of a chosen port or ports.
//
// # Taggers
//
// A [Tagger] is one format, found by its Linux tag protocol name with [ByName] (the name in
// /sys/class/net/<conduit>/dsa/tagging). [Tagger.Decode] strips the tag of a frame in a
// [frame.Batch] and fills the caller's [Info] (source port, switch index, trapped or forwarded, tag
// length, timestamp, folded VLAN tag); [Tagger.Encode] tags a frame toward a [Dest] (one port or a
// port mask, switch index, priority). [Tagger.Parse] is the read-only decode of plain bytes. All
// three never panic on any input and leave the frame untouched when they fail; errors are the
// package's sentinels ([ErrBadTag], [ErrTruncated], …).
// [Tagger.DecodeBatch] and [Tagger.EncodeBatch] do the same for a whole batch with the format
// chosen once per batch ([Conduit.Recv] decodes that way); prefer them in a forwarder's inner loop,
// where a per-frame call costs about as much as a batch form's whole per-frame work.
//
// The layouts are those of the kernel drivers (net/dsa/tag_*.c), which the test vectors quote
// byte by byte; each family's code is in tag_<family>.go. RX and TX are the tag bytes on frames from and to the switch; ports is how many
// ports the TX field can address and whether it takes a mask.
//
//	name           file                  position    RX  TX   pad  ports
//	dsa            tag_dsa.c             after SA     4   4    -   32     Marvell; folds an 802.1Q tag in place
//	edsa           tag_dsa.c             after SA     8   8    -   32     0xDADA 0x0000 + dsa
//	brcm           tag_brcm.c            after SA     4   4   64    9 mask
//	brcm-prepend   tag_brcm.c            before DA    4   4   64    9 mask
//	qca            tag_qca.c             after SA     2   2    -    7 mask
//	mtk            tag_mtk.c             after SA     4   4    -    6 mask merges with an 802.1Q/802.1ad tag
//	ksz8795        tag_ksz.c             tail         1   1   60    5 mask
//	ksz9477        tag_ksz.c             tail       1/5 2/6   60    7 mask RX timestamp flag; TX +4 with DestTimestamp
//	ksz9893        tag_ksz.c             tail       1/5 1/5   60    3 mask
//	lan937x        tag_ksz.c             tail       1/5 2/6   60    8 mask
//	rtl4a          tag_rtl4_a.c          after SA     4   4   60    8
//	rtl8_4         tag_rtl8_4.c          after SA     8   8    -   11 mask
//	rtl8_4t        tag_rtl8_4.c          tail         8   8   60   11 mask
//	ocelot-8021q   tag_8021q.c (0x8100)  after SA     4   4    -   16     VID = 0b11 | VBID | switch | port
//	vsc73xx-8021q  tag_8021q.c (0x8100)  after SA     4   4    -   16
//	sja1105        tag_8021q.c (0xDADB)  after SA     4   4    -   16     tag_8021q part only
//	ar9331         tag_ar9331.c          before DA    2   2    -   16
//	gswip          tag_gswip.c           before DA    8   4    -    6 mask
//	hellcreek      tag_hellcreek.c       tail         1   1   60    4
//	lan9303        tag_lan9303.c         after SA     4   4    -    3
//	trailer        tag_trailer.c         tail         4   4   60    8
//	none           -                     -            0   0    -    1
//
// Head tags need [Spec].Headroom bytes in front of a frame: pushing one moves only the 12 MAC
// bytes. Tail tags need [Spec].Tailroom bytes plus room to pad a runt.
//
// # Padding and the checksum-offload trap of tail tags
//
// A tail tag must be the last bytes before the FCS. If the conduit's driver or MAC pads a short
// frame after the tag was appended, the tag is no longer at the end and the switch reads padding
// as its tag. So Encode pads the untagged frame with zeros to 60 bytes (ETH_ZLEN) first, as the
// DSA core does for every tail tagger (dsa_realloc_skb / eth_skb_pad) and tag_trailer.c does
// itself; rtl4a pads to 60 before its head tag (__skb_put_padto in tag_rtl4_a.c), and brcm pads
// to 64 (ETH_ZLEN + BRCM_TAG_LEN) because the switch checks the length after stripping its tag.
// Other head taggers do not pad: mainline tag_mtk.c turns a 42-byte ARP request into 46 bytes.
// OpenWrt's kernels patch tag_mtk.c to pad to 60 first; [DestPad] (in Config.TxFlags) does that.
// That patch also sets bit 7 of the mtk tag for a switch other than 0 (cascaded MT7530s);
// mainline has no switch field, and neither does this package's mtk.
//
// Checksums must be final before a tail tag is appended: a NIC asked to fill in a TCP/UDP
// checksum (AF_PACKET with a virtio-net header, AF_XDP TX checksum offload, CHECKSUM_PARTIAL in
// the kernel) sums up to the end of the frame and would include the tag, which the switch then
// strips, leaving a wrong checksum on the wire. Linux computes such checksums in software
// (skb_checksum_help) in tag_ksz.c, tag_rtl8_4.c and tag_hellcreek.c for this reason. Never
// request checksum offload for frames tagged by a tail tagger; compute the checksum first.
// Head taggers have the opposite, milder problem: the conduit's offload cannot find the IP
// header behind an unknown tag, so it must not be asked either. Prefix taggers (brcm-prepend,
// ar9331, gswip) and some others (qca, tag_8021q) also need the conduit in promiscuous mode,
// because the switch's frames do not carry the conduit's MAC address where the NIC looks.
//
// # VLAN interplay
//
// Marvell's "tagged" bit means the switch folded the frame's 802.1Q tag into its own: Decode
// writes a regular 802.1Q tag (0x8100, TCI with the CFI bit moved back) in its place, as Linux
// does, and reports it with [InfoVLAN] and Info.TPID/TCI. Encode does the reverse for a frame
// that carries an 802.1Q tag in its bytes or out of band (frame.FlagVLAN with TPID 0x8100): the
// tag becomes the DSA tag instead of being pushed twice. mtk likewise replaces the TPID of an
// 802.1Q or 802.1ad tag with its own two bytes (TX only), so a tagged frame gets its switch tag
// without moving any byte. tag_8021q taggers are VLAN tags themselves: a VLAN frame whose VID
// is not a tag_8021q VID is reported as [ErrNotTagged] and left as it is.
//
// # Conduit
//
// A [Conduit] is the demultiplexer of one conduit interface: [Conduit.Recv] decodes a batch,
// sets Frame.Port to the user port, moves failures to a drop batch (or releases them) and counts
// everything per port and per [Reason]; [Conduit.Send] tags a batch toward each frame's
// Frame.Out, [Conduit.SendTo] toward a port mask. One Conduit per worker; counters are readable
// from any goroutine.
//
// Two kinds of frame that Linux delivers somewhere other than a user port have their own
// Frame.Port values after the user ports, when the Config asks for them (without, they are
// dropped and counted): frames from an offloaded LAG (Marvell's trunk bit, [InfoTrunk]), which
// Linux hands to the bond or team device, go to [Conduit.TrunkPort] of the trunk ID with
// Config.Trunks; frames that the tag driver hands to the conduit interface itself (rtl4a without
// the 0x8899 EtherType) go, unchanged, to [Conduit.LocalPort] with Config.Local.
//
// Optional per-frame work costs nothing while it is off: PTP
// timestamp classification runs only for ports that asked for it with
// [Conduit.EnableTimestamps], and the check is one load per batch. Build with -tags dsa_noptp to
// compile the branch out entirely; BenchmarkConduitPTP compares the three.
//
// # Adding a tag format
//
// Each format family is one file, tag_<family>.go, after Linux's net/dsa/tag_<family>.c; the
// registry table in registry.go lists the formats, and nothing else in the package names one. To
// add a format:
//
//  1. Write tag_<family>.go with a format value (its fields are documented in registry.go): the
//     Spec (spec: position, RX and TX lengths, padding, port width), parse and decode (the
//     general receive code, which strips the tag in place), encode (the general transmit code,
//     after the Dest was checked against the port width), and the switch side: swEncode writes
//     the RX tag, swDecode reads the TX tag, malformed corrupts an RX tag the way a broken switch
//     would. The helpers in tagbytes.go open and close the room for a tag.
//  2. Add the value to registry. The format now works everywhere (Tagger, Conduit, SwitchSide),
//     every frame through the general code.
//  3. Add its test vectors, quoting the kernel driver's bytes: rxVectors and txVectors
//     (vectors_test.go), the independent transcriptions of the driver (kernelDecode, kernelEncode
//     and txField in kernel_oracle_test.go; naiveRx, naiveTx and rxWidth in oracle_test.go), and a
//     FuzzX target in fuzz_test.go with its seed corpus (DSA_WRITE_SEEDS=1 go test -run
//     TestWriteFuzzSeeds). TestVectorsCoverAllTaggers and TestFuzzTargetsCoverAllTaggers fail until
//     they exist.
//  4. For speed, optionally: a one-frame batch loop decXBatch (and encXBatch) in the form the
//     module's internal/unroll accepts (its package doc; for i := range fr, the frame as &fr[i],
//     its Info as &ins[i], a frame left to the general code as slow(&rs[i]), no jump but
//     continue), and its four-frame copy decXBatchx4, which go generate ./dsa writes to
//     batch_x4.go, set as decodeBatch (encodeBatch) in the format; the pair in
//     TestLoopsEqualUnrolled (unroll_test.go), which fails until it is there; and a Tagger type
//     embedding codec with Decode and Encode fast paths that fall back to decodeSlow and
//     encodeSlow. The differential tests (TestBatchMatchesPerFrame, TestFastMatchesGeneral, the
//     fuzz targets) hold them to the general code.
//  5. Add its row to the table above.
//
// # Fuzzing
//
// Each tagger has a fuzz target (FuzzEDSA, FuzzMTK, …) that holds Decode and Encode, per frame and
// in batches, to byte-level expectations written from the kernel's tag drivers; FuzzSwitchSide
// holds the switch side to the naive reading of the TX layouts. scripts/fuzz.sh dsa 10s runs them
// all with the flags that keep the fuzzer searching (-fuzzminimizetime 200x).
package dsa
