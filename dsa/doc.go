// Package dsa encodes and decodes the tags Ethernet switch chips put on frames they exchange
// with the CPU port, in user space, in place and without allocating: Linux's net/dsa taggers.
package dsa
