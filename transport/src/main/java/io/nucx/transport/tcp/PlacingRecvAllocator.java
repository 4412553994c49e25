package io.nucx.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelConfig;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.util.UncheckedBooleanSupplier;

/**
 * One tcp lane's read buffers: its {@link AmFrameDecoder}'s when the decoder is reading a payload into its place (or
 * wants a small read after one), the channel's usual allocator's otherwise. epoll and nio ask their handle for the
 * buffer of each read just before the read, on the loop, one read at a time, so the decoder's state is current and a
 * placed buffer can be taken back between two reads (not so io_uring, whose read waits in the kernel: not used there).
 */
final class PlacingRecvAllocator implements RecvByteBufAllocator {

    private final RecvByteBufAllocator usual;
    private final AmFrameDecoder decoder;

    PlacingRecvAllocator(RecvByteBufAllocator usual, AmFrameDecoder decoder) {
        this.usual = usual;
        this.decoder = decoder;
    }

    @Override
    public Handle newHandle() {
        // The engines' handles wrap the channel's as an ExtendedHandle (Netty's own allocators all make one).
        return new PlacingHandle((ExtendedHandle) usual.newHandle(), decoder);
    }

    private static final class PlacingHandle implements ExtendedHandle {
        private final ExtendedHandle usual;
        private final AmFrameDecoder decoder;

        PlacingHandle(ExtendedHandle usual, AmFrameDecoder decoder) {
            this.usual = usual;
            this.decoder = decoder;
        }

        @Override
        public ByteBuf allocate(ByteBufAllocator alloc) {
            ByteBuf placed = decoder.nextRead(alloc);
            return placed != null ? placed : usual.allocate(alloc);
        }

        @Override
        public int guess() {
            return usual.guess();
        }

        @Override
        public void reset(ChannelConfig config) {
            usual.reset(config);
        }

        @Override
        public void incMessagesRead(int numMessages) {
            usual.incMessagesRead(numMessages);
        }

        @Override
        public void lastBytesRead(int bytes) {
            usual.lastBytesRead(bytes);
        }

        @Override
        public int lastBytesRead() {
            return usual.lastBytesRead();
        }

        @Override
        public void attemptedBytesRead(int bytes) {
            usual.attemptedBytesRead(bytes);
        }

        @Override
        public int attemptedBytesRead() {
            return usual.attemptedBytesRead();
        }

        @Override
        public boolean continueReading() {
            return usual.continueReading();
        }

        @Override
        public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
            return usual.continueReading(maybeMoreDataSupplier);
        }

        @Override
        public void readComplete() {
            usual.readComplete();
        }
    }
}
