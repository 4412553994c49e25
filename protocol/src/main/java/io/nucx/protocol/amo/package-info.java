/**
 * Remote atomics on registered memory. {@code AtomicOp}, {@code RemoteMemoryKey} and {@code RemoteAccessException}
 * are API; {@code AmoCodec} runs them as active messages (UCX's software atomics) applied with the CPU's atomic
 * instructions on the owner's loop, against the worker's {@code MemoryRegistry}.
 */
package io.nucx.protocol.amo;
