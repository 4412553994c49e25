/**
 * The {@code nucx} command ({@code bin/nucx}): {@code info} (transports, lanes, protocol tables), {@code perftest}
 * (ucx_perftest's tests and output) and {@code demo}. Argument parsing only: they call the library's printers and
 * the perftest library.
 */
package io.nucx.examples;
