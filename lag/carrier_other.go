//go:build !linux

package lag

// readCarrier has no carrier source outside Linux: members whose ports do not implement
// xmit.LinkStater keep the state SetMemberUp gives them.
func readCarrier(name string) (up, ok bool) { return false, false }
