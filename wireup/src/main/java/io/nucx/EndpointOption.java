package io.nucx;

import io.netty.channel.ChannelOption;

/** Options of an {@link Endpoint} channel, set like any Netty option ({@code endpoint.config().setOption(...)}). */
public final class EndpointOption {

    /** Tag of plain {@code ByteBuf} writes (a {@code TagMessage} carries its own). Default 0. */
    public static final ChannelOption<Long> SEND_TAG = ChannelOption.valueOf(EndpointOption.class, "SEND_TAG");

    /**
     * Tag that routes messages from this endpoint's peer up this endpoint's pipeline as {@code TagMessage}s when no
     * posted receive wants them (a posted receive always goes first). Used with {@link #PIPELINE_TAG_MASK}.
     */
    public static final ChannelOption<Long> PIPELINE_TAG = ChannelOption.valueOf(EndpointOption.class, "PIPELINE_TAG");

    /** Mask for {@link #PIPELINE_TAG}; unset (null) means nothing goes up the pipeline. 0 takes every tag. */
    public static final ChannelOption<Long> PIPELINE_TAG_MASK =
            ChannelOption.valueOf(EndpointOption.class, "PIPELINE_TAG_MASK");

    private EndpointOption() {
    }
}
