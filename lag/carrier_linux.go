package lag

import (
	"os"
	"strings"
)

// readCarrier reads /sys/class/net/<name>/carrier: "1" up, "0" down. The kernel refuses the read
// (EINVAL) while the interface is administratively down: that is down too. A missing interface is
// unknown. The sysfs tree shows the network namespace /sys was mounted in (ip netns exec remounts
// it); for a port in another namespace implement xmit.LinkStater instead.
func readCarrier(name string) (up, ok bool) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return false, false
	}
	dir := "/sys/class/net/" + name
	b, err := os.ReadFile(dir + "/carrier")
	if err != nil {
		if _, serr := os.Stat(dir); serr != nil {
			return false, false
		}
		return false, true
	}
	return len(b) > 0 && b[0] == '1', true
}
