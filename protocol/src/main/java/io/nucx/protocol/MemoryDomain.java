package io.nucx.protocol;

import io.nucx.transport.rma.RmaIface;

/**
 * One RMA device of a worker as memory registration sees it (UCX's memory domain): its iface, and the index of its
 * entry in the worker's address, which tags its keys in a {@link KeyBundle} so each peer lane finds the key of the
 * device it reaches.
 *
 * @param entry the device's address entry index
 * @param iface its iface, as an RMA memory domain
 * @param name  "transport/device", for errors
 */
public record MemoryDomain(int entry, RmaIface iface, String name) {
}
