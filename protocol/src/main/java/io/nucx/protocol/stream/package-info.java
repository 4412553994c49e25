/**
 * The stream family (UCX's {@code ucp_stream_*}): an ordered byte stream per endpoint, carried by the tag eager and
 * rendezvous codecs under its own first-frame ids, delivered in write order by
 * {@link io.nucx.protocol.stream.StreamCodec}, with a receive window for backpressure.
 * {@link io.nucx.protocol.stream.StreamData} is API (users write it, or use {@code io.nucx.NucxChannel}, and read plain
 * {@code ByteBuf}s); the rest is internal.
 */
package io.nucx.protocol.stream;
