// Package ring provides bounded lock-free queues that carry items (frame
// descriptors, indices, small structs) between goroutines in bursts.
//
// [SPSC] is a single-producer, single-consumer ring with a power-of-two
// capacity. Its burst methods move many items per call and publish them with
// one atomic store, so the cost of crossing cores is shared by the burst:
//
//   - EnqueueBurst / DequeueBurst: as many as fit / as many as are queued;
//   - EnqueueBulk / DequeueBulk: all or nothing;
//   - Enqueue / Dequeue: one item (one atomic store each: slow, for
//     convenience);
//   - EnqueueBurstWait / DequeueBurstWait: park the goroutine (after an
//     optional spin, Config.Spin) until the other side makes progress, the
//     ring is closed or a context is done. While nobody is parked this costs
//     the other side one plain load per burst, and a consumer that finds
//     items never parks. A parked producer is woken only once half the ring
//     (or all it asked for) is free, so it wakes to a large gap;
//   - Reserve / Commit and Peek / Release (and ReserveWait, PeekWait):
//     zero-copy bursts, as DPDK's rte_ring_*_zc_burst_start/finish. The
//     producer writes straight into the ring's slots and the consumer reads
//     them in place; each call returns one slice, cut at the end of the
//     ring's array, that is valid until the Commit or Release. FanIn has the
//     consumer half (Peek, PeekWait, Release: one ring per call).
//
// [FanIn] carries items from N producers to one consumer as N SPSC rings
// drained round-robin, and [FanOut] from one producer to N consumers, by
// index or by a per-item hash. Neither has a compare-and-swap loop or a
// shared index: multi-producer rings stall on the slowest producer's
// publish, per-producer rings do not.
//
// Counters (enqueued, dequeued, full, empty) are always on: the item counts
// are the ring indices themselves, and full/empty are updated only when an
// operation fails to move everything it asked for.
//
// [PinToCPU] optionally locks a worker goroutine to an OS thread pinned to
// one CPU (Linux only).
//
// Every type documents which goroutine may call which method. A second
// concurrent producer or consumer on one SPSC corrupts it; this is not
// checked at run time, but the tests run under the race detector.
package ring
