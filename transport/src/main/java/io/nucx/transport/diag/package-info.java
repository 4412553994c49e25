/**
 * Diagnostics a process installs for itself: {@link io.nucx.transport.diag.LeakLog} keeps every leak Netty's detector
 * reports, so tests, their peer processes and the example nodes can fail on leaks instead of only logging them.
 */
package io.nucx.transport.diag;
