package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;
import io.nucx.EndpointOption;

import java.util.Map;

/** An endpoint's channel configuration: Netty's defaults plus {@link EndpointOption}s. */
final class EndpointChannelConfig extends DefaultChannelConfig {

    private volatile long sendTag;
    private volatile long pipelineTag;
    private volatile Long pipelineTagMask;

    EndpointChannelConfig(Channel endpoint) {
        super(endpoint);
    }

    @Override
    protected void autoReadCleared() {
        ((EndpointChannel) channel).autoReadCleared();
    }

    long sendTag() {
        return sendTag;
    }

    /** Whether a message with {@code tag} goes up the pipeline. */
    boolean deliversToPipeline(long tag) {
        Long mask = pipelineTagMask;
        return mask != null && ((tag ^ pipelineTag) & mask) == 0;
    }

    @Override
    public Map<ChannelOption<?>, Object> getOptions() {
        return getOptions(super.getOptions(), EndpointOption.SEND_TAG, EndpointOption.PIPELINE_TAG,
                EndpointOption.PIPELINE_TAG_MASK);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(ChannelOption<T> option) {
        if (option == EndpointOption.SEND_TAG) {
            return (T) Long.valueOf(sendTag);
        }
        if (option == EndpointOption.PIPELINE_TAG) {
            return (T) Long.valueOf(pipelineTag);
        }
        if (option == EndpointOption.PIPELINE_TAG_MASK) {
            return (T) pipelineTagMask;
        }
        return super.getOption(option);
    }

    @Override
    public <T> boolean setOption(ChannelOption<T> option, T value) {
        if (option == EndpointOption.SEND_TAG) {
            sendTag = (Long) value;
        } else if (option == EndpointOption.PIPELINE_TAG) {
            pipelineTag = (Long) value;
        } else if (option == EndpointOption.PIPELINE_TAG_MASK) {
            pipelineTagMask = (Long) value;
        } else {
            return super.setOption(option, value);
        }
        return true;
    }
}
