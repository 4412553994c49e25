package io.nucx.transport;

import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoop;

import java.util.function.Supplier;

/**
 * What an iface is opened with.
 *
 * @param eventLoop        the loop every channel of this iface runs on (the worker's loop)
 * @param device           the device to open on
 * @param acceptedLane     makes the handler appended to each lane a remote peer connects to this iface
 * @param config           the validated configuration
 */
public record IfaceParams(EventLoop eventLoop, Device device, Supplier<ChannelHandler> acceptedLane,
                          NucxConfig config) {
}
