package io.nucx.transport;

import io.netty.channel.DefaultMessageSizeEstimator;
import io.netty.channel.MessageSizeEstimator;

/**
 * Sizes {@link AmFrame}s by their bytes, everything else as Netty's default estimator does (which counts unknown
 * types as 8 bytes, so without this a lane's water mark would never see its frames).
 */
public final class AmFrameSizeEstimator implements MessageSizeEstimator {

    public static final AmFrameSizeEstimator INSTANCE = new AmFrameSizeEstimator();
    private static final Handle DEFAULT = DefaultMessageSizeEstimator.DEFAULT.newHandle();
    private static final Handle HANDLE = msg -> msg instanceof AmFrame f ? f.length() : DEFAULT.size(msg);

    private AmFrameSizeEstimator() {
    }

    @Override
    public Handle newHandle() {
        return HANDLE;
    }
}
