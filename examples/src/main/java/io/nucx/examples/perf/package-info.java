/**
 * The perftest library: ucx_perftest's tests (tag latency and bandwidth, sync variants), run on the worker's loop,
 * reported in ucx_perftest's exact table and {@code Final:} line formats.
 */
package io.nucx.examples.perf;
