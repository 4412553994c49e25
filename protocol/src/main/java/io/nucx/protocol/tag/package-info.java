/**
 * Tagged messages. {@code TagMessage} and {@code MessageTruncatedException} are API; the rest is internal: the
 * worker's matching ({@code TagMatcher}: posted receives against arrivals), the eager family ({@code EagerCodec},
 * {@code EagerSender}, {@code EagerReceiver}, {@code EagerProtocols}), the rendezvous family ({@code RndvCodec},
 * {@code RndvSender}, {@code RndvReceiver} with the PUT safety rule, {@code RndvProtocols}, {@code RmaTransfer}), and
 * delivery up the pipeline in write order ({@code TagOrder}, {@code PipelineSlot}).
 */
package io.nucx.protocol.tag;
