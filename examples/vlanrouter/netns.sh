#!/bin/sh
# netns.sh: network namespaces to try vlanrouter on veth (root; iproute2).
#
#   ./netns.sh setup      make the namespaces and links below
#   ./netns.sh teardown   delete them (and nothing else)
#
#   vr-lan                      vr-rtr                          vr-wan
#   vr-trunk-p  <-- veth -->  vr-trunk  [vlanrouter]  vr-up  <-- veth -->  vr-up-p
#   (tagged frames, VIDs 101..120)                                        192.0.2.2/24, 198.18.0.1/15
#                                                                          10.0.0.0/16 via 192.0.2.1
#
# vr-up-p has the MAC vlanrouter sends upstream traffic to by default (02:67:77:00:00:01), and
# vr-wan has a permanent neighbour entry for 192.0.2.1 (the router's uplink, which answers no ARP)
# with vr-up's MAC, so the kernel in vr-wan routes 10.0.0.0/16 through the router. This kernel has no
# 8021q module, so vr-lan cannot have VLAN devices: tagged traffic on the trunk comes from a
# packet-socket sender (the bench generator, or the test's own). QUEUES=n makes the veths with n
# queues (AF_XDP binds one socket per queue: -workers n needs n).
#
# Then, for example:
#   ip netns exec vr-rtr go run ./examples/vlanrouter -backend afpacket -trunk vr-trunk -uplink vr-up -duration 0
#   ip netns exec vr-wan ping -c 3 10.0.1.2         # forwarded out of vr-trunk on VLAN 101
set -eu
Q=${QUEUES:-1}
case "${1:-}" in
setup)
	for ns in vr-lan vr-rtr vr-wan; do ip netns add $ns; ip -n $ns link set lo up; done
	ip link add vr-trunk netns vr-rtr numtxqueues $Q numrxqueues $Q type veth peer name vr-trunk-p netns vr-lan numtxqueues $Q numrxqueues $Q
	ip link add vr-up netns vr-rtr numtxqueues $Q numrxqueues $Q type veth peer name vr-up-p netns vr-wan numtxqueues $Q numrxqueues $Q
	ip -n vr-wan link set vr-up-p address 02:67:77:00:00:01
	for l in vr-trunk vr-up; do ip -n vr-rtr link set $l up; done
	ip -n vr-lan link set vr-trunk-p up
	ip -n vr-wan link set vr-up-p up
	ip -n vr-wan addr add 192.0.2.2/24 dev vr-up-p
	ip -n vr-wan addr add 198.18.0.1/15 dev vr-up-p
	up_mac=$(ip netns exec vr-rtr cat /sys/class/net/vr-up/address)
	ip -n vr-wan neigh replace 192.0.2.1 lladdr "$up_mac" nud permanent dev vr-up-p
	ip -n vr-wan route add 10.0.0.0/16 via 192.0.2.1 dev vr-up-p
	echo "vlanrouter namespaces ready: run it in vr-rtr with -trunk vr-trunk -uplink vr-up"
	;;
teardown)
	for ns in vr-lan vr-rtr vr-wan; do ip netns del $ns 2>/dev/null || true; done
	;;
*)
	echo "usage: $0 setup|teardown" >&2
	exit 2
	;;
esac
