#!/bin/sh
# netns.sh: network namespaces to try lagrouter on veth (root; iproute2).
#
#   ./netns.sh setup      make the namespaces and links below; what an earlier setup with the same
#                         prefix left is deleted first, so setup can be run again
#   ./netns.sh teardown   delete them (and nothing else)
#
#   PREFIX=xy ./netns.sh setup     names start with xy- instead of lr- (1-7 letters or digits), so
#                                  two setups on one machine do not collide; teardown needs the same
#   QUEUES=n ./netns.sh setup      veths with n queues (AF_XDP: -workers n needs n)
#
#   lr-lan ("the switch")       lr-rtr                                     lr-wan
#   lr-m0-p  <-- veth -->  lr-m0 \
#                                 lag0 [lagrouter]  lr-up  <-- veth -->  lr-up-p
#   lr-m1-p  <-- veth -->  lr-m1 /                                       192.0.2.2/24, 198.18.0.1/15
#   (tagged frames, VIDs 101..120)                                       10.0.0.0/16 via 192.0.2.1
#                    10.0.i.1/24 on VLAN i, 192.0.2.1/24 on the uplink
#
# The router's addresses exist only in lagrouter (the kernel in lr-rtr has none, so only lagrouter
# answers): it answers pings and ARP for them and sends ICMP errors from them, and it resolves its
# neighbours by ARP: lr-wan's 192.0.2.2 is its default gateway (-gateway), and the kernel in lr-wan
# resolves 192.0.2.1 by ARP and routes 10.0.0.0/16 through it. No neighbour entry is static on
# either side. This kernel has no bonding, team or 8021q module: the aggregate and the VLANs exist
# only in lagrouter, and tagged traffic on the members comes from a packet-socket sender in lr-lan
# (the tests' own also answers the router's tagged ARP requests for the VLAN hosts); without one,
# the router's requests for a VLAN host go unanswered and it answers with ICMP host unreachable
# after its retries (or give it -nexthop trunk=MAC: no ARP on the VLANs, everything there to MAC).
# Take a member down to see failover:
#   ip -n lr-rtr link set lr-m1 down     (and up again)
#
# Then, for example:
#   ip netns exec lr-rtr go run ./examples/lagrouter -backend afpacket -members lr-m0,lr-m1 -uplink lr-up -lag xor -duration 0
#   ip netns exec lr-wan ping -c 3 192.0.2.1        # answered by lagrouter
#   ip netns exec lr-wan ping -c 3 -t 1 10.0.1.2    # time to live exceeded, from 192.0.2.1
#   ip netns exec lr-wan ping -c 3 10.0.1.2         # ARP for 10.0.1.2 out of lag0 on VLAN 101; nobody
#                                                   # answers: host unreachable from 192.0.2.1
set -eu
P=${PREFIX:-lr}
Q=${QUEUES:-1}
case "$P" in
*[!A-Za-z0-9]* | "" | ????????*)
	echo "$0: PREFIX=$P: want 1-7 letters or digits (interface names have at most 15 characters)" >&2
	exit 2
	;;
esac
teardown() {
	for ns in $P-lan $P-rtr $P-wan; do
		if ip netns list | grep -qx "$ns\( (id: [0-9]*)\)\?"; then ip netns del $ns; fi
	done
}
case "${1:-}" in
setup)
	teardown
	for ns in $P-lan $P-rtr $P-wan; do ip netns add $ns; ip -n $ns link set lo up; done
	for m in $P-m0 $P-m1; do
		ip link add $m netns $P-rtr numtxqueues $Q numrxqueues $Q type veth peer name $m-p netns $P-lan numtxqueues $Q numrxqueues $Q
		ip -n $P-rtr link set $m up
		ip -n $P-lan link set $m-p up
	done
	ip link add $P-up netns $P-rtr numtxqueues $Q numrxqueues $Q type veth peer name $P-up-p netns $P-wan numtxqueues $Q numrxqueues $Q
	ip -n $P-rtr link set $P-up up
	ip -n $P-wan link set $P-up-p up
	ip -n $P-wan addr add 192.0.2.2/24 dev $P-up-p
	ip -n $P-wan addr add 198.18.0.1/15 dev $P-up-p
	ip -n $P-wan route add 10.0.0.0/16 via 192.0.2.1 dev $P-up-p
	echo "lagrouter namespaces ready: run it in $P-rtr with -members $P-m0,$P-m1 -uplink $P-up"
	;;
teardown)
	teardown
	;;
*)
	echo "usage: [PREFIX=lr] [QUEUES=1] $0 setup|teardown" >&2
	exit 2
	;;
esac
