package io.nucx.examples.perf;

import io.netty.buffer.ByteBuf;
import io.nucx.protocol.tag.TagReceive;

import java.util.function.Consumer;

/** Tags of the perftest conversation; the server answers by tag, so the client drives every phase. */
final class PerfTags {
    /** Client to server: answer with {@link #PONG} of the same size. */
    static final long PING = 1;
    static final long PONG = 2;
    /** Client to server: count and drop. */
    static final long DATA = 3;
    /**
     * Client to server: answer {@link #SYNC_ACK} (after every DATA before it, since one lane keeps order); with a
     * payload, the ack carries the server's {@link JitActivity#compilerNanos} (8 bytes).
     */
    static final long SYNC = 4;
    static final long SYNC_ACK = 5;
    /** Client to server: the run is over. */
    static final long FINISH = 6;
    /** Client to server: the measured run starts now (the server counts what it allocates from here). */
    static final long MEASURE = 7;

    /** Active-message ids of am_lat / am_bw (the phases' control messages stay tagged): as PING, PONG, DATA. */
    static final int AM_PING = 1;
    static final int AM_PONG = 2;
    static final int AM_DATA = 3;

    private PerfTags() {
    }

    /**
     * A reusable receive of exactly {@code tag} into {@code into} (the test's receive buffer, as ucx_perftest receives
     * into one; null: the receive allocates each message's buffer) that drops each message's bytes and runs
     * {@code onReceived}; a failure (the worker closing) goes to {@code onFailed}. Built once per run: nothing is
     * allocated per message.
     */
    static TagReceive discarding(long tag, ByteBuf into, Runnable onReceived, Consumer<Throwable> onFailed) {
        TagReceive.Handler handler = new TagReceive.Handler() {
            @Override
            public void received(long tag, ByteBuf data) {
                data.release();
                onReceived.run();
            }

            @Override
            public void receivedInto(long tag, ByteBuf buffer, int index, int length) {
                buffer.clear(); // the next message goes to the start again, as ucx_perftest's receive buffer
                onReceived.run();
            }

            @Override
            public void failed(Throwable cause) {
                onFailed.accept(cause);
            }
        };
        return into == null ? TagReceive.reusable(tag, -1L, handler) : TagReceive.reusable(tag, -1L, into, handler);
    }
}
