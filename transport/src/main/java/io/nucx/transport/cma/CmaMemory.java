package io.nucx.transport.cma;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.nucx.transport.rma.MemoryRegistration;

/**
 * Memory of this process exposed to every cma peer on this host ({@link CmaIface#registerMemory}): the key says where,
 * the kernel decides on each call who may reach it. Nothing to undo on close; a revoke cannot be honoured (any process
 * of the same user may write our memory, key or no key), so it fails, saying so.
 */
final class CmaMemory implements MemoryRegistration {

    private final CmaKey key;
    private final EventExecutor loop;

    CmaMemory(CmaKey key, EventExecutor loop) {
        this.key = key;
        this.loop = loop;
    }

    @Override
    public byte[] packedKey() {
        return key.pack(); // a new array each time, as the interface asks; usually asked once
    }

    @Override
    public long address() {
        return key.address();
    }

    @Override
    public long length() {
        return key.length();
    }

    @Override
    public void close() {
        // nothing was set up: the kernel checks permission on every call
    }

    @Override
    public Future<Void> revoke() {
        return loop.newFailedFuture(new UnsupportedOperationException("cma cannot withdraw access to " + this
                + ": the kernel lets any process of this user reach it"));
    }

    @Override
    public String toString() {
        return "cma memory 0x" + Long.toHexString(key.address()) + "+" + key.length();
    }
}
