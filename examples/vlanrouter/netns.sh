#!/bin/sh
# netns.sh: network namespaces to try vlanrouter on veth (root; iproute2).
#
#   ./netns.sh setup      make the namespaces and links below; what an earlier setup with the same
#                         prefix left is deleted first, so setup can be run again
#   ./netns.sh teardown   delete them (and nothing else)
#
#   PREFIX=xy ./netns.sh setup     names start with xy- instead of vr- (1-7 letters or digits), so
#                                  two setups on one machine do not collide; teardown needs the same
#   QUEUES=n ./netns.sh setup      veths with n queues (AF_XDP binds one socket per queue: -workers n
#                                  needs n)
#
#   vr-lan                      vr-rtr                          vr-wan
#   vr-trunk-p  <-- veth -->  vr-trunk  [vlanrouter]  vr-up  <-- veth -->  vr-up-p
#   (tagged frames, VIDs 101..120)   10.0.i.1/24 on VLAN i,               192.0.2.2/24, 198.18.0.1/15
#                                    192.0.2.1/24 on the uplink           10.0.0.0/16 via 192.0.2.1
#
# The router's addresses exist only in vlanrouter (the kernel in vr-rtr has none, so only vlanrouter
# answers): it answers pings and ARP for them and sends ICMP errors from them, and it resolves its
# neighbours by ARP: vr-wan's 192.0.2.2 is its default gateway (-gateway), and the kernel in vr-wan
# resolves 192.0.2.1 by ARP and routes 10.0.0.0/16 through it. No neighbour entry is static on
# either side. This kernel has no 8021q module, so vr-lan cannot have VLAN devices: tagged traffic
# on the trunk comes from a packet-socket sender (the bench generator, or the tests' own, which also
# answers the router's tagged ARP requests for the VLAN hosts); without one, the router's requests
# for a VLAN host go unanswered and it answers with ICMP host unreachable after its retries (or give
# it -nexthop trunk=MAC: no ARP on the VLANs, everything there to MAC).
#
# Then, for example:
#   ip netns exec vr-rtr go run ./examples/vlanrouter -backend afpacket -trunk vr-trunk -uplink vr-up -duration 0
#   ip netns exec vr-wan ping -c 3 192.0.2.1        # answered by vlanrouter
#   ip netns exec vr-wan ping -c 3 -t 1 10.0.1.2    # time to live exceeded, from 192.0.2.1
#   ip netns exec vr-wan ping -c 3 10.0.1.2         # ARP for 10.0.1.2 out of vr-trunk on VLAN 101; nobody
#                                                   # answers: host unreachable from 192.0.2.1
set -eu
P=${PREFIX:-vr}
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
	ip link add $P-trunk netns $P-rtr numtxqueues $Q numrxqueues $Q type veth peer name $P-trunk-p netns $P-lan numtxqueues $Q numrxqueues $Q
	ip link add $P-up netns $P-rtr numtxqueues $Q numrxqueues $Q type veth peer name $P-up-p netns $P-wan numtxqueues $Q numrxqueues $Q
	for l in $P-trunk $P-up; do ip -n $P-rtr link set $l up; done
	ip -n $P-lan link set $P-trunk-p up
	ip -n $P-wan link set $P-up-p up
	ip -n $P-wan addr add 192.0.2.2/24 dev $P-up-p
	ip -n $P-wan addr add 198.18.0.1/15 dev $P-up-p
	ip -n $P-wan route add 10.0.0.0/16 via 192.0.2.1 dev $P-up-p
	echo "vlanrouter namespaces ready: run it in $P-rtr with -trunk $P-trunk -uplink $P-up"
	;;
teardown)
	teardown
	;;
*)
	echo "usage: [PREFIX=vr] [QUEUES=1] $0 setup|teardown" >&2
	exit 2
	;;
esac
