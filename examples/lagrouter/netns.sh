#!/bin/sh
# netns.sh: network namespaces to try lagrouter on veth (root; iproute2).
#
#   ./netns.sh setup      make the namespaces and links below
#   ./netns.sh teardown   delete them (and nothing else)
#
#   lr-lan ("the switch")       lr-rtr                                     lr-wan
#   lr-m0-p  <-- veth -->  lr-m0 \
#                                 lag0 [lagrouter]  lr-up  <-- veth -->  lr-up-p
#   lr-m1-p  <-- veth -->  lr-m1 /                                       192.0.2.2/24, 198.18.0.1/15
#   (tagged frames, VIDs 101..120)                                       10.0.0.0/16 via 192.0.2.1
#
# lr-up-p has the MAC lagrouter sends upstream traffic to by default (02:67:77:00:00:01), and lr-wan
# has a permanent neighbour entry for 192.0.2.1 (the router's uplink, which answers no ARP) with
# lr-up's MAC, so the kernel in lr-wan routes 10.0.0.0/16 through the router. This kernel has no
# bonding, team or 8021q module: the aggregate and the VLANs exist only in lagrouter, and tagged
# traffic on the members comes from a packet-socket sender in lr-lan. QUEUES=n makes the veths with
# n queues (AF_XDP: -workers n needs n). Take a member down to see failover:
#   ip -n lr-rtr link set lr-m1 down     (and up again)
#
# Then, for example:
#   ip netns exec lr-rtr go run ./examples/lagrouter -backend afpacket -members lr-m0,lr-m1 -uplink lr-up -lag xor -duration 0
set -eu
Q=${QUEUES:-1}
case "${1:-}" in
setup)
	for ns in lr-lan lr-rtr lr-wan; do ip netns add $ns; ip -n $ns link set lo up; done
	for m in lr-m0 lr-m1; do
		ip link add $m netns lr-rtr numtxqueues $Q numrxqueues $Q type veth peer name $m-p netns lr-lan numtxqueues $Q numrxqueues $Q
		ip -n lr-rtr link set $m up
		ip -n lr-lan link set $m-p up
	done
	ip link add lr-up netns lr-rtr numtxqueues $Q numrxqueues $Q type veth peer name lr-up-p netns lr-wan numtxqueues $Q numrxqueues $Q
	ip -n lr-wan link set lr-up-p address 02:67:77:00:00:01
	ip -n lr-rtr link set lr-up up
	ip -n lr-wan link set lr-up-p up
	ip -n lr-wan addr add 192.0.2.2/24 dev lr-up-p
	ip -n lr-wan addr add 198.18.0.1/15 dev lr-up-p
	up_mac=$(ip netns exec lr-rtr cat /sys/class/net/lr-up/address)
	ip -n lr-wan neigh replace 192.0.2.1 lladdr "$up_mac" nud permanent dev lr-up-p
	ip -n lr-wan route add 10.0.0.0/16 via 192.0.2.1 dev lr-up-p
	echo "lagrouter namespaces ready: run it in lr-rtr with -members lr-m0,lr-m1 -uplink lr-up"
	;;
teardown)
	for ns in lr-lan lr-rtr lr-wan; do ip netns del $ns 2>/dev/null || true; done
	;;
*)
	echo "usage: $0 setup|teardown" >&2
	exit 2
	;;
esac
