/**
 * Internal: UCP's protocols v2. A protocol family ({@link io.nucx.protocol.ProtocolFamily}) declares its protocols for
 * selection and the active-message ids it receives, and runs them in one duplex codec per endpoint
 * ({@link io.nucx.protocol.ProtocolCodec}) that owns its requests; {@link io.nucx.protocol.ProtocolRegistry} is the
 * one ordered list of families. An endpoint gives its codecs {@link io.nucx.protocol.EndpointServices}; a worker's
 * shared protocol state is {@link io.nucx.protocol.WorkerProtocols}. Nothing here knows how lanes were chosen, nor any
 * concrete transport.
 */
package io.nucx.protocol;
