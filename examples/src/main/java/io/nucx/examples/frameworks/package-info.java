/**
 * Apps written with frameworks nobody here wrote (Netty's HTTP/1.1 codecs, Reactor Netty, gRPC-java), each runnable
 * over nucx's channel pair or over plain Netty TCP by changing only the event loop group and the channel classes
 * ({@link io.nucx.examples.frameworks.Stack}); a server main for other processes; a small harness measuring them.
 * The frameworks are provided dependencies: bench/compare-frameworks.sh and the integration tests bring them.
 */
package io.nucx.examples.frameworks;
